package api

import (
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

// FuzzParseInstance: any body is either a request whose count, priority
// and grace are what it said (count 1 when left out), or a 4xx naming the
// field at fault; never a panic.
func FuzzParseInstance(f *testing.F) {
	for _, s := range []string{
		`{"sku":"NC24-A100x1","region":"eastus"}`,
		`{"sku":"NC24-A100x1","region":"eastus","count":3,"priority":"spot","grace":"2m","wait":true}`,
		`{"sku":"x","region":"y","count":0}`, `{"count":-1}`, `{"count":"two"}`, `{"count":1e99}`,
		`{"priority":"gold"}`, `{"priority":"spot:x"}`, `{"grace":"soon"}`, `{"grace":"-1s"}`,
		`{"colour":"red"}`, `[]`, `{}`, `{"sku":"a"}{"sku":"b"}`, `null`, ``, `{"name":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, e := parseInstance(body)
		if e != nil {
			if e.Field == "" && !strings.HasPrefix(e.Message, "invalid JSON") {
				t.Fatalf("error %+v names no field, and the body is valid JSON", e)
			}
			if e.Field != "" {
				checkError(t, e, "count", "priority", "grace", "sku", "region", "name", "tenant", "wait")
			}
			return
		}
		if r.Priority.Class < model.ClassSpot || r.Priority.Class > model.ClassReserved {
			t.Fatalf("accepted priority %+v", r.Priority)
		}
	})
}
