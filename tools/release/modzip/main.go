// Command modzip writes one version of a Go module, from a directory, in the
// layout of a GOPROXY (https://go.dev/ref/mod#goproxy-protocol) under -out:
// <module>/@v/<version>.{info,mod,zip} and list. The zip is made as the Go
// command makes it from a VCS tag (golang.org/x/mod/zip: nested modules,
// vendor directories and VCS metadata left out), so its hashes are the ones a
// consumer's go.sum records for the tag. It prints the two go.sum lines.
//
// The release command (tools/release) runs it on the release tree for sdk/go
// and sdk/go/bridge: a file:// GOPROXY that proves the tagged modules resolve
// without a replace, before anything is pushed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the module's directory (its go.mod)")
	path := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the version (vX.Y.Z)")
	out := flag.String("out", "", "the GOPROXY directory to write into")
	flag.Parse()
	if err := run(*dir, *path, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "modzip:", err)
		os.Exit(1)
	}
}

func run(dir, path, version, out string) error {
	mv := module.Version{Path: path, Version: version}
	esc, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, esc, "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	zipPath := filepath.Join(vdir, version+".zip")
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, mv, dir); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    string
	}{version, time.Now().UTC().Format(time.RFC3339)})
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, "list"), []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	zh, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		return err
	}
	mh, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) { return os.Open(filepath.Join(dir, "go.mod")) })
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n%s %s/go.mod %s\n", path, version, zh, path, version, mh)
	return nil
}
