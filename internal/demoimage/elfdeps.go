package demoimage

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
)

// goarch is the image's architecture, the executable's.
func goarch() string { return goruntime.GOARCH }

// libDirs are where the dynamic loader of a Debian host finds shared
// libraries without its cache, multiarch first: the image has no
// ld.so.cache, so each library goes where the loader's built-in search
// finds it by name.
func libDirs() []string {
	triple := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[goruntime.GOARCH]
	var dirs []string
	if triple != "" {
		dirs = append(dirs, "/lib/"+triple, "/usr/lib/"+triple)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// filesOf is what the image holds of the host: the executable exe at
// Executable and, when it is dynamically linked, its ELF interpreter at
// the path it names and every library it needs, directly or through
// another, under its name in the directory where the loader finds it
// (their contents, links followed). Image path → host path.
func filesOf(exe string) (map[string]string, error) {
	files := map[string]string{Executable: exe}
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("read the executable %s: %w", exe, err)
	}
	defer f.Close()
	interp, err := interpreter(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", exe, err)
	}
	if interp != "" {
		files[interp] = interp
	}
	seen := map[string]bool{}
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("%s: its libraries: %w", exe, err)
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		at, err := findLib(name, f.Machine)
		if err != nil {
			return nil, fmt.Errorf("%s needs %s: %w", exe, name, err)
		}
		files[at] = at
		lib, err := elf.Open(at)
		if err != nil {
			return nil, err
		}
		more, err := lib.ImportedLibraries()
		lib.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: its libraries: %w", at, err)
		}
		queue = append(queue, more...)
	}
	return files, nil
}

// interpreter is the ELF interpreter f names (PT_INTERP), "" for a
// static executable.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("its interpreter: %w", err)
		}
		for len(b) > 0 && b[len(b)-1] == 0 {
			b = b[:len(b)-1]
		}
		if !filepath.IsAbs(string(b)) {
			return "", fmt.Errorf("its interpreter %q is not an absolute path", b)
		}
		return string(b), nil
	}
	return "", nil
}

// findLib is the path under which the loader finds the library name, for
// an executable of machine.
func findLib(name string, machine elf.Machine) (string, error) {
	if filepath.Base(name) != name {
		return "", fmt.Errorf("a library named by a path is not looked up")
	}
	for _, d := range libDirs() {
		p := filepath.Join(d, name)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		lib, err := elf.Open(p)
		if err != nil {
			continue
		}
		ok := lib.Machine == machine
		lib.Close()
		if ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %v", libDirs())
}
