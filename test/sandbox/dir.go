package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dirMarker marks a folder the demo created, so that only such a folder is ever emptied.
const dirMarker = ".ballast-demo"

// PrepareDir makes dir an empty sandbox folder. A missing or empty folder is used (and
// marked); a folder the demo marked earlier is emptied; any other non-empty folder is
// refused, untouched, so `--dir=.` can never delete a checkout.
func PrepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dir, dirMarker)); err != nil {
			return fmt.Errorf("refusing to use %s: it is not empty and was not created by the demo (choose a new or empty folder)", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, dirMarker), []byte("created by ballast-demo; emptied at its next start\n"), 0o644)
}
