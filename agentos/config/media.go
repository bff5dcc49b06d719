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
	// (default 1h), public_read, and static credentials (else the AWS
	// default chain: environment, profile, instance role).
	Bucket        string        `yaml:"bucket"`
	Prefix        string        `yaml:"prefix"`
	Region        string        `yaml:"region"`
	Endpoint      string        `yaml:"endpoint"`
	PathStyle     bool          `yaml:"path_style"`
	PresignExpiry time.Duration `yaml:"presign_expiry"`
	PublicRead    bool          `yaml:"public_read"`
	AccessKey     string        `yaml:"access_key"`
	SecretKey     string        `yaml:"secret_key"`
}

// Open builds the storage (nil for type "none"); dataDir is the default
// local root's parent. An S3 bucket that does not exist is an error here,
// at start.
func (m *MediaStorage) Open(ctx context.Context, dataDir string) (media.Storage, error) {
	c := MediaStorage{Type: "local"}
	if m != nil {
		c = *m
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
		s, err := s3.New(ctx, s3.Config{Bucket: c.Bucket, Prefix: c.Prefix, Region: c.Region, Endpoint: c.Endpoint, PathStyle: c.PathStyle,
			PresignExpiry: c.PresignExpiry, PublicRead: c.PublicRead, AccessKey: c.AccessKey, SecretKey: c.SecretKey})
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
