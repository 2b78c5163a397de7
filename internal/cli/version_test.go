package cli

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadVersion(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/allot-dev/allot"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"}}}
	v := readVersion(info, true)
	want := buildVersion{Module: "github.com/allot-dev/allot", Version: "(devel)", Revision: "abc123",
		Time: "2026-11-30T10:00:00Z", Modified: true, Go: "go1.26.0", Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v != want {
		t.Errorf("readVersion = %+v, want %+v", v, want)
	}
	if v := readVersion(nil, false); v.Version != "unknown" || v.Go != runtime.Version() {
		t.Errorf("without build info: %+v", v)
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), []string{"version", "-o", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var v buildVersion
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if v.Go != runtime.Version() || v.Module != "github.com/allot-dev/allot" {
		t.Errorf("version -o json = %+v", v)
	}
	out.Reset()
	if code := Run(t.Context(), []string{"version"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Go:") {
		t.Errorf("version: exit %d\n%s", code, out.String())
	}
}
