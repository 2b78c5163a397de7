// Package demoimage builds the image of allot's demo programs from the
// allot executable itself, on the machine, downloading nothing: an OCI
// image layout (the image-spec's directory form, which podman runs as
// oci:/DIR:TAG) of one layer holding the executable at
// /usr/local/bin/allot, with its ELF interpreter and the shared libraries
// it loads where it is not static (found as the dynamic loader finds them
// on this host, elfdeps.go), the directories allot mounts over
// (/allot/work, /allot/checkpoints) and /tmp. Its entrypoint is allot's
// executable and its default arguments 'demo serve', so that an endpoint
// that names the image and no command runs the demo server, as it does on
// the host without an image, and a job file's 'command: [allot, demo,
// train]' runs the same program in a container as on the host.
//
// The format is github.com/google/go-containerregistry's (layout, mutate,
// tarball); this package only chooses the files.
package demoimage
