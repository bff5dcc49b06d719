package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment overrides, applied over the file (flags apply over these):
//
//	AGENTRY_HOST, AGENTRY_PORT              server.host, server.port
//	AGENTRY_DB                              db.dsn
//	AGENTRY_CORS_ORIGINS                    server.cors_origins (comma-separated)
//	AGENTRY_BODY_LIMIT                      server.body_limit ("32MiB")
//	AGENTRY_SHUTDOWN_TIMEOUT                server.shutdown_timeout ("30s")
//	OS_SECURITY_KEY, AGENTRY_SECURITY_KEY   auth.security_key (the latter wins)
//	AGENTRY_USER_ISOLATION                  user_isolation (true/false)
//	JWT_VERIFICATION_KEY, AGENTRY_JWT_VERIFICATION_KEY
//	                                        auth.jwt.verification_keys (replaced by this one key)
//	JWT_JWKS_FILE, AGENTRY_JWT_JWKS_FILE    auth.jwt.jwks_file
//	AGENTRY_BACKGROUND_MAX_CONCURRENCY      queue.max_concurrency
//
// JWT_SECRET_KEY (Agno 2.x) is an error naming JWT_VERIFICATION_KEY.

// ApplyEnv applies the environment overrides listed above.
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	get := func(names ...string) (string, bool) {
		var val string
		var found bool
		for _, n := range names {
			if v, ok := lookup(n); ok && v != "" {
				val, found = v, true
			}
		}
		return val, found
	}
	if _, ok := get("JWT_SECRET_KEY"); ok {
		return fmt.Errorf("config: JWT_SECRET_KEY was renamed in Agno 3.0: use JWT_VERIFICATION_KEY")
	}
	if err := c.Queue.applyEnv(get); err != nil {
		return err
	}
	if v, ok := get("AGENTRY_HOST"); ok {
		c.Server.Host = v
	}
	if v, ok := get("AGENTRY_PORT"); ok {
		p, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("config: AGENTRY_PORT=%q is not a number", v)
		}
		c.Server.Port = p
	}
	if v, ok := get("AGENTRY_DB"); ok {
		c.DB.DSN = v
	}
	if v, ok := get("AGENTRY_CORS_ORIGINS"); ok {
		var origins []string
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				origins = append(origins, o)
			}
		}
		c.Server.CORSOrigins = origins
	}
	if v, ok := get("AGENTRY_BODY_LIMIT"); ok {
		n, err := ParseByteSize(v)
		if err != nil {
			return fmt.Errorf("config: AGENTRY_BODY_LIMIT: %w", err)
		}
		c.Server.BodyLimit = n
	}
	if v, ok := get("AGENTRY_SHUTDOWN_TIMEOUT"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("config: AGENTRY_SHUTDOWN_TIMEOUT=%q: use a duration like 30s", v)
		}
		c.Server.ShutdownTimeout = d
	}
	if v, ok := get("OS_SECURITY_KEY", "AGENTRY_SECURITY_KEY"); ok {
		c.Auth.SecurityKey = v
	}
	if v, ok := get("AGENTRY_USER_ISOLATION"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("config: AGENTRY_USER_ISOLATION=%q: use true or false", v)
		}
		c.UserIsolation = b
	}
	key, hasKey := get("JWT_VERIFICATION_KEY", "AGENTRY_JWT_VERIFICATION_KEY")
	jwks, hasJWKS := get("JWT_JWKS_FILE", "AGENTRY_JWT_JWKS_FILE")
	if hasKey || hasJWKS {
		if c.Auth.JWT == nil {
			c.Auth.JWT = &JWT{}
			c.Auth.JWT.fillDefaults()
		}
		if hasKey {
			c.Auth.JWT.VerificationKeys = []VerificationKey{{Key: key}}
		}
		if hasJWKS {
			c.Auth.JWT.JWKSFile = jwks
		}
	}
	return nil
}
