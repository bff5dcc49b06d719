package config

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/media/s3"
)

// MediaStorage is the server-wide `media_storage`: where the agents' images,
// audio, video and files go when runs are stored. Absent, `agentry serve`
// uses local storage under its data directory's media/.
type MediaStorage struct {
	// Type is "local", "s3" or "none" (media stay inline in runs).
	Type string `yaml:"type"`
	// Dir is local's directory; default DATA_DIR/media.
	Dir string `yaml:"dir"`
	// S3: bucket (required), prefix (default "agentry/media/"), region,
	// endpoint and path_style for S3-compatible servers, presign_expiry
	// (default 1h), public_read, response_timeout (how long a request
	// waits for the server to answer or take more of an upload, and a
	// download for more data; default 60s), and static credentials (else
	// the AWS default chain: environment, profile, instance role).
	Bucket        string        `yaml:"bucket"`
	Prefix        string        `yaml:"prefix"`
	Region        string        `yaml:"region"`
	Endpoint      string        `yaml:"endpoint"`
	PathStyle     bool          `yaml:"path_style"`
	PresignExpiry time.Duration `yaml:"presign_expiry"`
	PublicRead    bool          `yaml:"public_read"`
	// ResponseTimeout is s3.Config.ResponseTimeout.
	ResponseTimeout time.Duration `yaml:"response_timeout"`
	AccessKey       string        `yaml:"access_key"`
	SecretKey       string        `yaml:"secret_key"`
}

// Open builds the storage (nil for type "none"); dataDir is the default
// local root's parent. An S3 bucket that does not exist is an error here,
// at start.
func (m *MediaStorage) Open(ctx context.Context, dataDir string) (media.Storage, error) {
	c := MediaStorage{Type: "local"}
	if m != nil {
		c = *m
	}
	// A key of another type would be accepted and do nothing.
	s3Keys := c
	s3Keys.Type, s3Keys.Dir = "", ""
	switch {
	case (c.Type == "" || c.Type == "local" || c.Type == "none") && s3Keys != MediaStorage{}:
		return nil, fmt.Errorf("config: media_storage: bucket, prefix, region, endpoint, path_style, presign_expiry, public_read, response_timeout and the keys are type s3's; type %s does not use them", c.typeName())
	case (c.Type == "s3" || c.Type == "none") && c.Dir != "":
		return nil, fmt.Errorf("config: media_storage: dir is type local's; type %s does not use it", c.Type)
	}
	switch c.Type {
	case "", "local":
		dir := c.Dir
		if dir == "" {
			dir = filepath.Join(dataDir, "media")
		}
		return local.New(dir)
	case "s3":
		if c.Bucket == "" {
			return nil, fmt.Errorf("config: media_storage: type s3 needs a bucket")
		}
		if c.ResponseTimeout < 0 {
			return nil, fmt.Errorf("config: media_storage: response_timeout %s is negative (omit it for the default, %s)", c.ResponseTimeout, s3.DefaultResponseTimeout)
		}
		s, err := s3.New(ctx, s3.Config{Bucket: c.Bucket, Prefix: c.Prefix, Region: c.Region, Endpoint: c.Endpoint, PathStyle: c.PathStyle,
			PresignExpiry: c.PresignExpiry, PublicRead: c.PublicRead, ResponseTimeout: c.ResponseTimeout, AccessKey: c.AccessKey, SecretKey: c.SecretKey})
		if err != nil {
			return nil, fmt.Errorf("config: media_storage: %w", err)
		}
		return s, nil
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("config: media_storage: type %q is not local, s3 or none", c.Type)
	}
}

// typeName is the type as written, "local" when absent.
func (m MediaStorage) typeName() string {
	if m.Type == "" {
		return "local"
	}
	return m.Type
}
