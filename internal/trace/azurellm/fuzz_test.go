package azurellm

import (
	"errors"
	"strings"
	"testing"
)

func FuzzReadRequests(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n2023-11-16 18:17:04.0319600,3180,8")
	f.Add("GeneratedTokens,TIMESTAMP,ContextTokens\n1,2023-11-16 18:17:03.5,2\n\n0,2023-11-16 18:17:03.500000001,1\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.5,1,1\n2023-11-16 18:17:03.4,1,1\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n0001-01-01 00:00:00.0,1,1\n9999-12-31 23:59:59.999999999,1,1\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n\"x")
	f.Fuzz(func(t *testing.T, in string) {
		reqs, err := ReadRequests(strings.NewReader(in), "f.csv")
		if err != nil {
			if reqs != nil {
				t.Fatalf("requests and error both returned")
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			if !strings.HasPrefix(err.Error(), "f.csv:") {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		if len(reqs) == 0 || reqs[0].At != 0 {
			t.Fatalf("accepted %d requests, first at %v", len(reqs), reqs[0].At)
		}
		for i, r := range reqs {
			if r.Context < 1 || r.Generated < 0 || r.Context > MaxTokens || r.Generated > MaxTokens {
				t.Fatalf("request %d has bad tokens: %+v", i, r)
			}
			if i > 0 && r.At < reqs[i-1].At {
				t.Fatalf("request %d at %v comes before request %d at %v", i, r.At, i-1, reqs[i-1].At)
			}
		}
		if len(reqs) >= 2 && reqs[len(reqs)-1].At > 0 {
			p, err := NewPattern(reqs, 0)
			if err != nil {
				t.Fatalf("NewPattern of accepted requests: %v", err)
			}
			if cv := p.CV(); cv < 0 || cv != cv {
				t.Fatalf("CV %g", cv)
			}
		}
	})
}
