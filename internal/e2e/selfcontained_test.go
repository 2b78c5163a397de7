package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSharedReferences keeps the repository self-contained: no Go file,
// .ci/run, README, doc or example may refer to the directory beside the
// checkout; only the scripts that drive the Slurm peer may name its peers.
func TestNoSharedReferences(t *testing.T) {
	outside := ".." + "/shared"
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" || rel == "scripts" || strings.HasPrefix(d.Name(), ".") && rel != ".ci" {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".go"), strings.HasSuffix(rel, ".md"), rel == filepath.Join(".ci", "run"),
			strings.HasPrefix(rel, "examples"+string(filepath.Separator)), strings.HasPrefix(rel, "docs"+string(filepath.Separator)):
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), outside) {
			t.Errorf("%s refers to %s: the repository must hold what it uses", rel, outside)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
