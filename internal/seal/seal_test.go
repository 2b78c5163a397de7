package seal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	k, _, err := RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("bot:s3cret-token")
	aad := []byte("/registry-auth/acme/ghcr.io")
	a, err := k.Seal(plain, aad)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Seal(plain, aad)
	if bytes.Equal(a, b) || bytes.Contains(a, plain) {
		t.Errorf("sealed twice alike, or the secret shows: %x", a)
	}
	got, err := k.Open(a, aad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _, _ := RandomKey()
	changed := bytes.Clone(a)
	changed[len(changed)-1] ^= 1
	for name, open := range map[string]func() ([]byte, error){
		"another key":    func() ([]byte, error) { return other.Open(a, aad) },
		"another record": func() ([]byte, error) { return k.Open(a, []byte("/registry-auth/globex/ghcr.io")) },
		"changed":        func() ([]byte, error) { return k.Open(changed, aad) },
	} {
		if got, err := open(); !errors.Is(err, ErrOpen) || got != nil {
			t.Errorf("%s: %q, %v; want ErrOpen", name, got, err)
		}
	}
	if _, err := k.Open(a[:5], aad); err == nil || errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), "at least") {
		t.Errorf("a short value: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	good := strings.Repeat("0f", KeySize)
	if _, err := ParseKey(" " + good + "\n"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "00", strings.Repeat("zz", KeySize), good + "00"} {
		if _, err := ParseKey(bad); err == nil || !strings.HasPrefix(err.Error(), "seal: a key file holds") {
			t.Errorf("ParseKey(%q) = %v", bad, err)
		}
	}
}

// LoadOrCreate makes a key file once, 0600, reads the same key back, and
// refuses one others may read.
func TestLoadOrCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret-key")
	k, made, err := LoadOrCreate(path)
	if err != nil || !made {
		t.Fatalf("first: %v, made %v", err, made)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", st, err)
	}
	sealed, _ := k.Seal([]byte("x"), nil)
	again, made, err := LoadOrCreate(path)
	if err != nil || made {
		t.Fatalf("second: %v, made %v", err, made)
	}
	if got, err := again.Open(sealed, nil); err != nil || string(got) != "x" {
		t.Errorf("the key read back does not open what the first sealed: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreate(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key file others may read: %v", err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "bad"), []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreate(filepath.Join(filepath.Dir(path), "bad")); err == nil || !strings.Contains(err.Error(), "hex digits") {
		t.Errorf("a key file of no key: %v", err)
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add(strings.Repeat("ab", KeySize))
	f.Add("not a key")
	f.Fuzz(func(t *testing.T, text string) {
		k, err := ParseKey(text)
		if (k == nil) == (err == nil) {
			t.Fatalf("ParseKey(%q) = %v, %v", text, k, err)
		}
		if err != nil && strings.Contains(err.Error(), strings.TrimSpace(text)) && len(strings.TrimSpace(text)) > 8 {
			t.Fatalf("the error quotes the key file: %v", err)
		}
	})
}

func FuzzOpen(f *testing.F) {
	k, err := NewKey(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		f.Fatal(err)
	}
	s, _ := k.Seal([]byte("bot:pw"), []byte("r"))
	f.Add(s, []byte("r"))
	f.Add([]byte{1, 2, 3}, []byte(""))
	f.Fuzz(func(t *testing.T, sealed, aad []byte) {
		plain, err := k.Open(sealed, aad)
		if err == nil {
			// Only what was sealed opens: seal it again and back.
			again, _ := k.Seal(plain, aad)
			if back, err := k.Open(again, aad); err != nil || !bytes.Equal(back, plain) {
				t.Fatalf("round trip of %q: %q, %v", plain, back, err)
			}
			return
		}
		if plain != nil {
			t.Fatalf("an error and %q", plain)
		}
	})
}
