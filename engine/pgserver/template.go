//go:build unix

package pgserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// initdb is the costliest step of a cluster's start (about a second of
// CPU and many files written), yet what it makes depends only on the
// binaries and its arguments. So the first cluster made with a pair of
// binaries is kept in a cache, and later starts copy it: about a tenth of
// the time. The copy is the same cluster initdb would have made; its
// system identifier is shared, which nothing here uses.

// templateMarker names, inside a cache entry, the initdb the entry was made
// with, so that an entry superseded by new binaries at the same path can be
// removed.
const templateMarker = "initdb-path"

// templateKey names the cache entry for these binaries and arguments: it
// changes when either binary changes (size or time), when the arguments
// change, or when the server runs as another user.
func templateKey(initdb, postgres string, args []string, serverUID int) (string, error) {
	h := sha256.New()
	for _, bin := range []string{initdb, postgres} {
		fi, err := os.Stat(bin)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", bin, fi.Size(), fi.ModTime().UnixNano())
	}
	fmt.Fprintf(h, "%s\x00%d", strings.Join(args, "\x00"), serverUID)
	return "cluster-" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// templateArgs are initdb's arguments without the data directory and the
// password file, which differ for every cluster.
func templateArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-D":
			i++
		case strings.HasPrefix(args[i], "--pwfile="):
		default:
			out = append(out, args[i])
		}
	}
	return out
}

// makeData fills data with a new cluster: a copy of the cache entry when
// there is one, else initdb's, which then becomes the entry ("" for none).
// Starts that find no entry take turns: the first runs initdb, and the
// rest wait for it and copy what it made, instead of each running initdb.
func makeData(ctx context.Context, entry, data, initdb string, cred *syscall.Credential, runInitdb func() error, progress func(string)) error {
	if entry == "" {
		return runInitdb()
	}
	copied := func() bool {
		if !copyFromTemplate(entry, data, cred) {
			return false
		}
		report(progress, "initdb: copying the cluster it made before")
		return true
	}
	if copied() {
		return nil
	}
	// The lock is the cache's own: when it cannot be had (a cache
	// directory that cannot be written), initdb runs as if alone. No
	// "initdb" in the waiting line: it would read as initdb running.
	var release func()
	if err := os.MkdirAll(filepath.Dir(entry), 0o700); err == nil {
		release, err = lockCache(ctx, clusterLock(entry), func() {
			report(progress, "waiting for another leaserace that is making a cluster with the same binaries, to copy it")
		})
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("waiting for another leaserace to make the cluster to copy: %w", err)
		}
	}
	if release != nil {
		defer release()
		if copied() {
			return nil
		}
	}
	if err := runInitdb(); err != nil {
		return err
	}
	saveTemplate(entry, data, initdb)
	return nil
}

// clusterLock is the lock file of the cache entry: beside it, hidden,
// and there only while a start is making the entry.
func clusterLock(entry string) string {
	return filepath.Join(filepath.Dir(entry), ".lock-"+filepath.Base(entry))
}

// copyFromTemplate makes data a copy of the cache entry's cluster, owned
// by cred (nil: ourselves). It reports false, leaving no data directory
// behind, when there is no usable entry: the caller then runs initdb.
func copyFromTemplate(entry, data string, cred *syscall.Credential) bool {
	src := filepath.Join(entry, "data")
	if fi, err := os.Stat(filepath.Join(src, "PG_VERSION")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if err := copyTree(src, data, cred); err != nil {
		os.RemoveAll(data)
		return false
	}
	return true
}

// saveTemplate keeps a copy of a cluster initdb has just made (before any
// server ran on it) as the cache entry. It is a cache: any failure leaves
// things as they were and is not the caller's concern. Entries made for an
// older build of the same initdb go.
func saveTemplate(entry, data, initdb string) {
	root := filepath.Dir(entry)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return
	}
	tmp := filepath.Join(root, ".making-"+rand.Text()[:12])
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return
	}
	defer os.RemoveAll(tmp) // gone after the rename; otherwise half-made
	if err := copyTree(data, filepath.Join(tmp, "data"), nil); err != nil {
		return
	}
	if err := os.WriteFile(filepath.Join(tmp, templateMarker), []byte(initdb), 0o600); err != nil {
		return
	}
	// The rename makes the entry whole at once: a reader sees all of it or
	// none. Another start that got there first keeps its own.
	if err := os.Rename(tmp, entry); err != nil {
		return
	}
	siblings, _ := os.ReadDir(root)
	ours := clusterLock(entry)
	for _, s := range siblings {
		other := filepath.Join(root, s.Name())
		if strings.HasPrefix(s.Name(), ".lock-cluster-") && other != ours {
			// Left by a start killed while it made an entry: a lock
			// nobody holds, of binaries that may never come back.
			removeUnheldLock(other)
			continue
		}
		if other == entry || !strings.HasPrefix(s.Name(), "cluster-") {
			continue
		}
		// Superseded, or made from binaries since removed (an embedded
		// cache that was cleared).
		b, err := os.ReadFile(filepath.Join(other, templateMarker))
		if err != nil {
			continue
		}
		if _, err := os.Stat(string(b)); string(b) == initdb || errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(other)
		}
	}
}

// copyTree copies the directory src to dst (which must not exist), with
// the same permissions, handing everything to cred when it is not nil.
// A cluster holds only directories and regular files.
func copyTree(src, dst string, cred *syscall.Credential) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, fi.Mode().Perm()); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyFile(path, to, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is neither a file nor a directory", path)
		}
		if cred != nil {
			return os.Lchown(to, int(cred.Uid), int(cred.Gid))
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// defaultTemplateCache is where clusters are kept when the provider names
// no place: the user's cache directory, or nowhere when there is none.
func defaultTemplateCache() string {
	c, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(c, "leaserace", "initdb")
}

// templateEntry is the cache entry for this cluster, or "" when clusters
// are not cached.
func templateEntry(cache, initdb, postgres string, initArgs []string, cred *syscall.Credential) string {
	switch cache {
	case NoClusterCache:
		return ""
	case "":
		if cache = defaultTemplateCache(); cache == "" {
			return ""
		}
	}
	uid := -1
	if cred != nil {
		uid = int(cred.Uid)
	}
	key, err := templateKey(initdb, postgres, templateArgs(initArgs), uid)
	if err != nil {
		return ""
	}
	return filepath.Join(cache, key)
}
