package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/model"
)

const providerName = "AwsBedrock"

// Supported lists the parameters Converse takes. Seeds, penalties,
// reasoning_effort and JSON mode without a schema have no Converse field;
// parallel_tool_calls is the model's choice.
var Supported = []string{
	model.ParamTemperature, model.ParamTopP, model.ParamMaxTokens, model.ParamStop, model.ParamThinkingBudget,
	model.ParamResponseFormat, model.ParamToolChoice, model.ParamTimeout, model.ParamExtraHeaders, model.ParamExtraBody,
}

// Config configures a Model. Model is required; Region defaults to AWS_REGION
// (then AWS_DEFAULT_REGION) and Credentials to the AWS default chain
// (environment, shared files, SSO, web identity, IMDS).
type Config struct {
	// Model is a model or inference-profile id, e.g.
	// "anthropic.claude-3-5-sonnet-20240620-v1:0" or "us.amazon.nova-pro-v1:0".
	Model       string
	Region      string
	Credentials aws.CredentialsProvider
	// BaseURL overrides https://bedrock-runtime.{region}.amazonaws.com (a VPC
	// endpoint, a loopback test server).
	BaseURL    string
	HTTPClient *http.Client
	// Params are sent with every call; see Supported. thinking_budget becomes
	// additionalModelRequestFields.thinking (Claude); extra_body is merged at
	// the top level of the Converse body, so it can set
	// additionalModelRequestFields for other models (its keys join the
	// thinking configuration rather than replace it).
	Params model.Params
}

// Model is a Bedrock Converse model, immutable after New and safe for concurrent use.
//
// Structured output: Converse has no response-format field, so a
// ResponseFormat becomes a tool the model is made to call (as for Anthropic);
// its input is returned as Content.
type Model struct {
	cfg    Config
	base   string
	signer *v4.Signer
}

var _ model.Model = (*Model)(nil)

// New validates cfg and returns a Model. Loading the default credential chain
// reads local configuration only; credentials are fetched on the first call.
func New(ctx context.Context, cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("bedrock: Config.Model is required (e.g. \"anthropic.claude-3-5-sonnet-20240620-v1:0\")")
	}
	if err := cfg.Params.Check(providerName, Supported...); err != nil {
		return nil, err
	}
	if rf := cfg.Params.ResponseFormat; rf != nil && len(rf.Schema) == 0 {
		return nil, fmt.Errorf("bedrock: %w: response_format without a schema (JSON mode); give a JSON Schema", model.ErrUnsupportedParam)
	}
	if cfg.Region == "" {
		cfg.Region = os.Getenv("AWS_REGION")
	}
	if cfg.Region == "" {
		cfg.Region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if cfg.Credentials == nil || cfg.Region == "" {
		opts := []func(*awsconfig.LoadOptions) error{}
		if cfg.Region != "" {
			opts = append(opts, awsconfig.WithRegion(cfg.Region))
		}
		ac, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("bedrock: loading AWS configuration: %w", err)
		}
		if cfg.Region == "" {
			cfg.Region = ac.Region
		}
		if cfg.Credentials == nil {
			cfg.Credentials = ac.Credentials
		}
	}
	if cfg.Region == "" {
		return nil, errors.New("bedrock: no region: set Config.Region or AWS_REGION")
	}
	if cfg.Credentials == nil {
		return nil, errors.New("bedrock: no AWS credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, or Config.Credentials")
	}
	base := cfg.BaseURL
	if base == "" {
		base = "https://bedrock-runtime." + cfg.Region + ".amazonaws.com"
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bedrock: Config.BaseURL %q must be an absolute http(s) URL", base)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return &Model{cfg: cfg, base: strings.TrimRight(base, "/"), signer: v4.NewSigner()}, nil
}

// Info names the model as Agno does.
func (m *Model) Info() model.Info {
	return model.Info{ID: m.cfg.Model, Name: "AwsBedrock", Provider: providerName}
}

// Invoke calls Converse.
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, cancel := m.cfg.Params.WithTimeout(ctx)
	defer cancel()
	plan, err := m.buildRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, "converse", plan.body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := model.ReadResponse(ctx, "bedrock", resp.Body)
	if err != nil {
		return nil, err
	}
	return decodeResponse(data, plan.formatTool)
}

// Stream calls ConverseStream and yields chunks as events arrive.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		ctx, cancel := m.cfg.Params.WithTimeout(ctx)
		defer cancel()
		plan, err := m.buildRequest(req)
		if err != nil {
			yield(nil, err)
			return
		}
		resp, err := m.post(ctx, "converse-stream", plan.body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		for c, err := range decodeStream(resp.Body, plan.formatTool) {
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("bedrock: stream: %w", ctx.Err())
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

// post signs and sends body to /model/{id}/{op}.
func (m *Model) post(ctx context.Context, op string, body []byte) (*http.Response, error) {
	// Escaped like the AWS SDK does, ":" included (model ids end in ":0").
	escaped := "/model/" + strings.ReplaceAll(url.PathEscape(m.cfg.Model), ":", "%3A") + "/" + op
	u, err := url.Parse(m.base + escaped)
	if err != nil {
		return nil, fmt.Errorf("bedrock: building URL: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("bedrock: building request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if op == "converse-stream" {
		hreq.Header.Set("Accept", "application/vnd.amazon.eventstream")
	}
	for k, v := range m.cfg.Params.ExtraHeaders {
		hreq.Header.Set(k, v)
	}
	creds, err := m.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("bedrock: %w", ctx.Err())
		}
		return nil, fmt.Errorf("bedrock: retrieving AWS credentials: %w: %w", model.ErrAuth, err)
	}
	sum := sha256.Sum256(body)
	if err := m.signer.SignHTTP(ctx, creds, hreq, hex.EncodeToString(sum[:]), "bedrock", m.cfg.Region, time.Now()); err != nil {
		return nil, fmt.Errorf("bedrock: signing request: %w", err)
	}
	resp, err := m.cfg.HTTPClient.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("bedrock: %w", ctx.Err())
		}
		// No answer at all is not a server error: no server was reached.
		return nil, model.Unreachable(providerName, hreq.URL.String(), err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	// A body echoing the request (a proxy's debug page) keeps the
	// credentials sent, the extra headers' values (a gateway's own
	// credential) among them, out of the error, which reaches logs and
	// stored runs.
	raw = model.RedactSecrets(raw, append([]string{creds.SessionToken, creds.SecretAccessKey}, slices.Collect(maps.Values(m.cfg.Params.ExtraHeaders))...)...)
	return nil, httpError(resp.StatusCode, resp.Header, raw)
}

// httpError classifies an error answer; its type is the x-amzn-ErrorType
// header ("ThrottlingException:http://…") or the body's __type.
func httpError(status int, h http.Header, raw []byte) error {
	var body struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
		Type     string `json:"__type"`
	}
	_ = json.Unmarshal(raw, &body)
	typ := h.Get("X-Amzn-Errortype")
	if typ == "" {
		typ = body.Type
	}
	typ, _, _ = strings.Cut(typ, ":")
	if i := strings.LastIndex(typ, "#"); i >= 0 {
		typ = typ[i+1:]
	}
	msg := body.Message + body.Message2
	if msg == "" {
		msg = clip.Mark(strings.TrimSpace(string(raw)), model.MaxErrorMessage, "…")
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if typ != "" {
		msg = typ + ": " + msg
	}
	pe := model.ClassifyHTTP(providerName, status, h, msg)
	if k := exceptionKind(typ); k != nil && pe.Kind != model.ErrContextLength {
		pe.Kind = k
	}
	return pe
}

// exceptionKind maps Bedrock's exception names to error kinds; nil leaves
// the status-based classification.
func exceptionKind(typ string) error {
	switch strings.ToLower(typ) {
	case "throttlingexception":
		return model.ErrRateLimit
	case "internalserverexception", "serviceunavailableexception", "modelstreamerrorexception",
		"modeltimeoutexception", "modelnotreadyexception":
		return model.ErrServer
	case "accessdeniedexception", "unrecognizedclientexception", "expiredtokenexception":
		return model.ErrAuth
	case "servicequotaexceededexception":
		return model.ErrQuotaExceeded
	case "validationexception", "resourcenotfoundexception", "modelerrorexception":
		return model.ErrBadRequest
	}
	return nil
}

// ReadsHistory reports that the model reads a request's History
// (model.HistoryReader): the agent shares its history without a copy.
func (m *Model) ReadsHistory() bool { return true }
