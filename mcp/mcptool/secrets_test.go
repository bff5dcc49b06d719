package mcptool_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// Some servers take their API key in the URL's query. The transport's
// errors quote the URL, and a toolkit's error ends in the run's error, the
// logs and the API's answer: the values are written *** (as net/http
// writes a URL's password), the keys kept.
func TestToolkit_URLQueryValuesAreNotInErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now: connecting fails
	k := newKit(t, mcptool.Config{URL: "http://" + addr + "/mcp?api_key=SECRET1&team=SECRET2&flag"})
	_, err = k.Tools(context.Background())
	if !errors.Is(err, mcptool.ErrUnavailable) {
		t.Fatalf("Tools = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("the error quotes the URL's query values: %v", err)
	}
	if !strings.Contains(err.Error(), "api_key=***&team=***&flag") {
		t.Errorf("the error should still name the query's keys: %v", err)
	}
}
