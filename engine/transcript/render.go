package transcript

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/leaserace/leaserace/scenario"
)

// Formats lists the formats Render writes, in the order an evidence
// bundle or run --out DIR writes them.
func Formats() []string { return []string{"json", "md", "mermaid"} }

// Ext is the file extension for a format ("mermaid" → ".mmd").
func Ext(format string) string {
	if format == "mermaid" {
		return ".mmd"
	}
	return "." + format
}

// Render writes a transcript in one format: json, md or mermaid.
func Render(t Transcript, format string) ([]byte, error) {
	var b bytes.Buffer
	var err error
	switch format {
	case "json":
		err = t.WriteJSON(&b)
	case "md":
		err = WriteMarkdown(&b, t)
	case "mermaid":
		err = WriteMermaid(&b, t)
	default:
		return nil, fmt.Errorf("unknown transcript format %q: want %s", format, strings.Join(Formats(), ", "))
	}
	return b.Bytes(), err
}

// Name is the file name, without extension, leaserace gives the transcript
// of a scenario under some knobs: "renewal-race--blind-off".
func Name(scenarioName string, k scenario.Knobs) string {
	return fmt.Sprintf("%s--%s-%s", scenarioName, k.Renewal, k.Fencing)
}

// ValueWords shows a JSON value compactly; null and empty read as "none".
func ValueWords(v []byte) string {
	s := strings.TrimSpace(string(v))
	if s == "" || s == "null" {
		return "none"
	}
	return s
}
