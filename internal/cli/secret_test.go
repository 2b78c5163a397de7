package cli

import (
	"strings"
	"testing"
)

func TestReadSecret(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"tok\n", "tok", ""},
		{"tok", "tok", ""},
		{"tok\r\nsecond line\n", "tok", ""},
		{"", "", "no password"},
		{"\n", "", "no password"},
		{strings.Repeat("p", maxSecret+1) + "\n", "", "over"},
	} {
		got, err := readSecret(strings.NewReader(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("readSecret(%.20q) = %q, %v; want an error about %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("readSecret(%.20q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzReadSecret(f *testing.F) {
	f.Add("tok\n")
	f.Add("a\r\nb")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := readSecret(strings.NewReader(in))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("error without a message")
			}
			return
		}
		if got == "" || len(got) > maxSecret || strings.ContainsAny(got, "\n") || !strings.HasPrefix(in, got) {
			t.Fatalf("readSecret(%q) = %q", in, got)
		}
	})
}

// 'secret set' needs its flags before it reads anything or asks the
// server.
func TestSecretSetNeedsRegistry(t *testing.T) {
	isolate(t)
	_, errOut, code := runCLI(t, "secret", "set", "--username", "u", "--server", "http://127.0.0.1:1", "--token", "tok")
	if code == 0 || !strings.Contains(errOut, "registry") {
		t.Errorf("exit %d, stderr %q; want a refusal naming --registry", code, errOut)
	}
}
