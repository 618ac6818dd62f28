// Package sbom writes an SPDX 2.3 document (JSON) for a Go binary from the
// build information the Go toolchain embeds in it: the binary, the Go
// toolchain, the main module and every module linked in, each with its
// package URL. Nothing in it depends on the time it is written (created is
// given), so the same binary gives the same document.
package sbom

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// Document is an SPDX 2.3 document, the fields tandem writes.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

// CreationInfo says when and by what the document was made.
type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// Package is an SPDX package: the binary, the toolchain or a module.
type Package struct {
	SPDXID           string        `json:"SPDXID"`
	Name             string        `json:"name"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	LicenseConcluded string        `json:"licenseConcluded"`
	LicenseDeclared  string        `json:"licenseDeclared"`
	CopyrightText    string        `json:"copyrightText"`
	Checksums        []Checksum    `json:"checksums,omitempty"`
	ExternalRefs     []ExternalRef `json:"externalRefs,omitempty"`
	PrimaryPurpose   string        `json:"primaryPackagePurpose,omitempty"`
}

// Checksum of a package's file.
type Checksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

// ExternalRef names a package elsewhere: its package URL.
type ExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

// Relationship between two SPDX elements.
type Relationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

const noAssertion = "NOASSERTION"

// For returns the document of the Go binary at path, named name (its file
// name in a release), created at created, in namespace base (a URI prefix).
// version, if set, is the binary's and its main module's version: a binary
// built from a working tree has none of its own ("(devel)").
func For(path, name, version string, created time.Time, base string) (*Document, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return fromInfo(info, data, name, version, created, base), nil
}

// fromInfo is For of the binary data with build information info.
func fromInfo(info *debug.BuildInfo, data []byte, name, version string, created time.Time, base string) *Document {
	if version != "" {
		info.Main.Version = version
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	binary := Package{
		SPDXID: "SPDXRef-Binary", Name: name, VersionInfo: info.Main.Version,
		DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
		Checksums:      []Checksum{{Algorithm: "SHA256", Value: digest}},
		PrimaryPurpose: "APPLICATION",
	}
	doc := &Document{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              name,
		DocumentNamespace: strings.TrimSuffix(base, "/") + "/" + filepath.Base(name) + "-" + digest,
		CreationInfo:      CreationInfo{Created: created.UTC().Format(time.RFC3339), Creators: []string{"Tool: tandem-sbom"}},
		Packages:          []Package{binary},
		Relationships:     []Relationship{{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: binary.SPDXID}},
	}
	add := func(id, name, version, purl string) {
		doc.Packages = append(doc.Packages, Package{
			SPDXID: id, Name: name, VersionInfo: version,
			DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
			ExternalRefs: []ExternalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: purl}},
		})
		doc.Relationships = append(doc.Relationships, Relationship{Element: binary.SPDXID, Type: "CONTAINS", Related: id})
	}
	goVersion := strings.TrimPrefix(info.GoVersion, "go")
	add("SPDXRef-Go", "go", goVersion, "pkg:golang/stdlib@"+goVersion)
	add("SPDXRef-Module-0", info.Main.Path, info.Main.Version, purl(info.Main.Path, info.Main.Version))
	for i, m := range info.Deps {
		path, version := m.Path, m.Version
		switch {
		case m.Replace != nil && m.Replace.Version == "":
			// Replaced by a directory of the same tree (./contract): the
			// module is the one named, at the binary's version.
			version = info.Main.Version
		case m.Replace != nil:
			path, version = m.Replace.Path, m.Replace.Version
		}
		add(fmt.Sprintf("SPDXRef-Module-%d", i+1), path, version, purl(path, version))
	}
	return doc
}

// purl is the package URL of Go module path at version.
func purl(path, version string) string {
	p := "pkg:golang/" + path
	if version != "" && version != "(devel)" {
		p += "@" + version
	}
	return p
}

// JSON is doc as indented JSON with a final newline.
func (doc *Document) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
