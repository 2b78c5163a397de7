package traces

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
)

func TestOpen(t *testing.T) {
	if got, want := Names(), []string{"azure-code", "azure-conv", "philly"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			f, err := Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatal("empty")
			}
			// The embedded copy is the file of this folder, byte for byte.
			want, err := os.ReadFile(builtin[name])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("embedded %d bytes differ from %s (%d bytes)", len(got), builtin[name], len(want))
			}
		})
	}
}

func TestOpenUnknown(t *testing.T) {
	f, err := Open("alibaba")
	if f != nil || !errors.Is(err, ErrUnknown) {
		t.Fatalf("Open = %v, %v; want an error wrapping ErrUnknown", f, err)
	}
	if want := `traces: unknown trace "alibaba" (known: azure-code, azure-conv, philly)`; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
