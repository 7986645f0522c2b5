package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that anyone reading it sees
// either the old file or the whole new one: the data goes to a temporary
// file in the same directory (same file system, so the rename is atomic),
// which is synced and then renamed over path. On any failure, including
// ctx ending, the temporary file is removed and path is left as it was.
func WriteFileAtomic(ctx context.Context, path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("cannot write %s: it exists and is not a regular file", path)
		}
		mode = st.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("cannot set the mode of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot flush %s to disk: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	// Last chance to honour Ctrl-C before the new file becomes visible.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot move the new file into place at %s: %w", path, err)
	}
	return nil
}

// CheckOutPath fails early, before any server starts, when path cannot be
// written: its directory is missing, or it names a directory.
func CheckOutPath(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return UsageErr("--out %s: directory %s does not exist", path, dir)
	}
	if !st.IsDir() {
		return UsageErr("--out %s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return UsageErr("--out %s is a directory; give a file name", path)
	}
	return nil
}
