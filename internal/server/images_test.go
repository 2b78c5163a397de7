package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/api/wire"
)

// A node's images are what its agent's last heartbeat said, sorted and
// once each; an empty list clears them; a bad reference or too many are
// refused naming the field, and change nothing; the map a cycle took is
// never changed under it.
func TestSetNodeImages(t *testing.T) {
	srv, _, must := labWithNodes(t)
	must(srv.SetNodeImages("h100-01", []string{"registry.example/b:1", "registry.example/a:1", "registry.example/b:1"}))
	taken := srv.imagesHeld()
	if got, want := srv.NodeImages("h100-01"), []string{"registry.example/a:1", "registry.example/b:1"}; !slices.Equal(got, want) {
		t.Errorf("images %q, want %q", got, want)
	}
	for _, tc := range []struct {
		images []string
		field  string
	}{
		{[]string{"registry.example/a:1", "Not An Image"}, "images[1]"},
		{[]string{""}, "images[0]"},
		{make([]string, wire.MaxHeartbeatImages+1), "images"},
	} {
		err := srv.SetNodeImages("h100-01", tc.images)
		var r *Error
		if !isCode(err, CodeInvalidSpec) || !errors.As(err, &r) || r.Field != tc.field {
			t.Errorf("SetNodeImages(%q) = %v, want InvalidSpec naming %s", tc.images, err, tc.field)
		}
	}
	if err := srv.SetNodeImages("no-such-node", nil); !isCode(err, CodeNotFound) {
		t.Errorf("an unknown node: %v, want NotFound", err)
	}
	must(srv.SetNodeImages("h100-02", []string{"registry.example/a:1"}))
	must(srv.SetNodeImages("h100-01", []string{}))
	if got := srv.NodeImages("h100-01"); got != nil {
		t.Errorf("after an empty list: %q", got)
	}
	if got := srv.imagesHeld(); len(got) != 1 || !slices.Equal(got["h100-02"], []string{"registry.example/a:1"}) {
		t.Errorf("held %v, want h100-02's alone", got)
	}
	if len(taken) != 1 || len(taken["h100-01"]) != 2 || taken["h100-02"] != nil {
		t.Errorf("the map a cycle took changed under it: %v", taken)
	}
	if d, err := srv.Node("h100-02"); err != nil || !slices.Equal(d.Images, []string{"registry.example/a:1"}) {
		t.Errorf("node h100-02's detail: images %q, %v", d.Images, err)
	}
}

func FuzzCheckImages(f *testing.F) {
	f.Add("registry.example/team/train:1\noci:/srv/images/demo:1")
	f.Add("Not An Image")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		images := strings.Split(in, "\n")
		err := checkImages(images)
		if err == nil {
			return
		}
		var r *Error
		if !errors.As(err, &r) || r.Code != CodeInvalidSpec || !strings.HasPrefix(r.Field, "images") {
			t.Fatalf("checkImages(%q) = %v, want InvalidSpec naming images", images, err)
		}
		if strings.HasPrefix(r.Field, "images[") {
			var i int
			if _, serr := fmt.Sscanf(r.Field, "images[%d]", &i); serr != nil || i < 0 || i >= len(images) {
				t.Fatalf("field %q names no image of %d", r.Field, len(images))
			}
		}
	})
}
