package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "tok"}

func credsProvider() aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return testCreds, nil })
}

func newTestModel(t *testing.T, base string, p model.Params) *Model {
	t.Helper()
	m, err := New(context.Background(), Config{Model: "anthropic.claude-3-5-sonnet-20240620-v1:0", Region: "us-east-1",
		Credentials: credsProvider(), BaseURL: base, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var authPattern = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/us-east-1/bedrock/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// verifySigV4 checks the request's signature the way Bedrock would: the
// Authorization header is well-formed and equals a fresh signature over the
// received method, path, signed headers and body.
func verifySigV4(t *testing.T, r *http.Request, body []byte) {
	t.Helper()
	auth := r.Header.Get("Authorization")
	m := authPattern.FindStringSubmatch(auth)
	if m == nil {
		t.Errorf("Authorization header is not a SigV4 signature: %q", auth)
		return
	}
	signed := strings.Split(m[2], ";")
	for _, need := range []string{"host", "x-amz-date", "x-amz-security-token"} {
		if !strings.Contains(";"+m[2]+";", ";"+need+";") {
			t.Errorf("SignedHeaders %q lacks %s", m[2], need)
		}
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || when.Format("20060102") != m[1] {
		t.Errorf("X-Amz-Date %q does not match the credential scope date %s", r.Header.Get("X-Amz-Date"), m[1])
		return
	}
	clone, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.EscapedPath(), bytes.NewReader(body))
	clone.URL.RawPath = r.URL.RawPath
	for _, h := range signed {
		if h == "host" || h == "content-length" {
			continue
		}
		clone.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), testCreds, clone, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", when); err != nil {
		t.Fatal(err)
	}
	if got := clone.Header.Get("Authorization"); got != auth {
		t.Errorf("signature does not verify:\n sent %s\n want %s", auth, got)
	}
}

// frame encodes one ConverseStream event with the SDK's event-stream encoder.
func frame(eventType, payload string) []byte {
	return encode(eventstream.Message{Headers: eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("event")},
		{Name: ":event-type", Value: eventstream.StringValue(eventType)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
	}, Payload: []byte(payload)})
}

func exceptionFrame(name, msg string) []byte {
	return encode(eventstream.Message{Headers: eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("exception")},
		{Name: ":exception-type", Value: eventstream.StringValue(name)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
	}, Payload: []byte(`{"message":"` + msg + `"}`)})
}

func encode(msg eventstream.Message) []byte {
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, msg); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func streamReply(frames ...[]byte) modeltest.Reply {
	return modeltest.Reply{Header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, Parts: frames}
}

// Events as ConverseStream sends them.
func msgStart() []byte { return frame("messageStart", `{"p":"abcd","role":"assistant"}`) }
func textDelta(i, s string) []byte {
	return frame("contentBlockDelta", `{"contentBlockIndex":`+i+`,"delta":{"text":"`+s+`"},"p":"ab"}`)
}
func toolStart(i, id, name string) []byte {
	return frame("contentBlockStart", `{"contentBlockIndex":`+i+`,"p":"a","start":{"toolUse":{"name":"`+name+`","toolUseId":"`+id+`"}}}`)
}
func toolDelta(i, input string) []byte {
	return frame("contentBlockDelta", `{"contentBlockIndex":`+i+`,"delta":{"toolUse":{"input":"`+input+`"}},"p":"abc"}`)
}
func blockStop(i string) []byte {
	return frame("contentBlockStop", `{"contentBlockIndex":`+i+`,"p":"abcdef"}`)
}
func msgStop(reason string) []byte {
	return frame("messageStop", `{"p":"abcdefgh","stopReason":"`+reason+`"}`)
}

const usageJSON = `{"inputTokens":25,"outputTokens":12,"totalTokens":437,"cacheReadInputTokens":300,"cacheWriteInputTokens":100}`

func metadata() []byte {
	return frame("metadata", `{"metrics":{"latencyMs":812},"p":"abc","usage":`+usageJSON+`}`)
}

// testUsage is usageJSON read as Agno reads it: Bedrock's totalTokens
// counts the cache reads and writes too (25+12+300+100), Agno's total is
// input plus output, as for Claude on the Anthropic API.
var testUsage = model.Usage{InputTokens: 25, OutputTokens: 12, TotalTokens: 37, CacheReadTokens: 300, CacheWriteTokens: 100}

// unescapedPath is the model path as the server sees it.
func unescapedPath(op string) string {
	p, _ := url.PathUnescape("/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/" + op)
	return p
}
