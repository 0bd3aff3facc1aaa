// Package config reads Grantry's settings: environment variables GRANTRY_*, which flags of
// `grantry serve` may override. Secrets come only from the environment and are never printed.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/grantry/grantry/internal/seal"
)

// Config holds every setting. The zero value is not useful; start from Default or FromEnv.
type Config struct {
	Addr            string // GRANTRY_ADDR: listen address
	MongoURI        string // GRANTRY_MONGO_URI: empty = the embedded store
	MongoDB         string // GRANTRY_MONGO_DB: database name
	DataDir         string // GRANTRY_DATA_DIR: embedded store file and development secrets
	BootstrapAPIKey string // GRANTRY_BOOTSTRAP_API_KEY: secret
	AdminToken      string // GRANTRY_ADMIN_TOKEN: secret; empty = admin API off
	SecretKey       string // GRANTRY_SECRET_KEY: secret; base64 of 32 bytes
	PolicyDir       string // GRANTRY_POLICY_DIR: empty = the embedded policy

	RequestTimeout  time.Duration // GRANTRY_REQUEST_TIMEOUT: deadline of every request
	ShutdownTimeout time.Duration // GRANTRY_SHUTDOWN_TIMEOUT: how long in-flight requests may take to finish
	RateLimit       float64       // GRANTRY_RATE_LIMIT: requests a second per API key or SCIM token; 0 = no limit
	RateBurst       int           // GRANTRY_RATE_BURST: requests at once per API key or SCIM token; 0 = one second's worth

	SecretKeyPrevious string       // GRANTRY_SECRET_KEY_PREVIOUS: secret; earlier master keys, comma-separated
	Integrations      Integrations // GRANTRY_*_BASE_URL, GRANTRY_DEFAULT_*_PROVIDER (integrations.go)

	DecisionLog     bool // GRANTRY_DECISION_LOG: log every check's decision (decisionlog.go)
	DecisionLogDays int  // GRANTRY_DECISION_LOG_DAYS: days decisions are kept (decisionlog.go)

	CacheEntries int  // GRANTRY_CACHE_ENTRIES: users the decision engine holds in memory (cache.go)
	Preload      bool // GRANTRY_PRELOAD: read the embedded store's file into memory at start (cache.go)

	LogLevel slog.Level // GRANTRY_LOG_LEVEL: the least severe level logged (logging.go)

	Gateway Gateway // GRANTRY_GATEWAY_*, GRANTRY_EXTAUTHZ_ADDR (gateway.go)

	// unparsed says, for each variable set to a value that its reader could not parse and that
	// has no value of its own to mark it (as -1 marks a whole number), what it must be.
	unparsed []error
}

// Default returns the settings used when nothing is set.
func Default() Config {
	return Config{
		Addr:    "127.0.0.1:8080",
		MongoDB: "grantry",
		DataDir: "./data",

		RequestTimeout:  DefaultRequestTimeout,
		ShutdownTimeout: DefaultShutdownTimeout,

		Integrations: DefaultIntegrations(),

		DecisionLog:     DefaultDecisionLog,
		DecisionLogDays: DefaultDecisionLogDays,

		CacheEntries: DefaultCacheEntries,
		Preload:      DefaultPreload,

		LogLevel: DefaultLogLevel,

		Gateway: DefaultGateway(),
	}
}

// FromEnv returns Default overridden by every GRANTRY_* variable that is set and not empty.
func FromEnv(getenv func(string) string) Config {
	c := Default()
	for name, field := range map[string]*string{
		"GRANTRY_ADDR":              &c.Addr,
		"GRANTRY_MONGO_URI":         &c.MongoURI,
		"GRANTRY_MONGO_DB":          &c.MongoDB,
		"GRANTRY_DATA_DIR":          &c.DataDir,
		"GRANTRY_BOOTSTRAP_API_KEY": &c.BootstrapAPIKey,
		"GRANTRY_ADMIN_TOKEN":       &c.AdminToken,
		"GRANTRY_SECRET_KEY":        &c.SecretKey,
		"GRANTRY_POLICY_DIR":        &c.PolicyDir,
	} {
		if v := getenv(name); v != "" {
			*field = v
		}
	}
	c.readOperations(getenv)
	c.readIntegrations(getenv)
	c.readDecisionLog(getenv)
	c.readCache(getenv)
	c.readLogging(getenv)
	c.readGateway(getenv)
	return c
}

// RegisterFlags lets flags override the settings that are not secrets.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (GRANTRY_ADDR)")
	fs.StringVar(&c.MongoURI, "mongo-uri", c.MongoURI, "MongoDB URI; empty = the embedded store (GRANTRY_MONGO_URI)")
	fs.StringVar(&c.MongoDB, "mongo-db", c.MongoDB, "MongoDB database name (GRANTRY_MONGO_DB)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "folder of the embedded store and development secrets (GRANTRY_DATA_DIR)")
	fs.StringVar(&c.PolicyDir, "policy-dir", c.PolicyDir, "folder of .rego files replacing the embedded policy (GRANTRY_POLICY_DIR)")
	c.registerOperationFlags(fs)
	c.registerIntegrationFlags(fs)
	c.registerDecisionLogFlags(fs)
	c.registerCacheFlags(fs)
	c.registerLoggingFlags(fs)
	c.registerGatewayFlags(fs)
}

// Validate reports every problem with the settings at once.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("GRANTRY_ADDR %q is not host:port", c.Addr))
	}
	if c.MongoDB == "" || strings.ContainsAny(c.MongoDB, `/\. "$`) {
		errs = append(errs, fmt.Errorf("GRANTRY_MONGO_DB %q is not a valid database name", c.MongoDB))
	}
	if c.MongoURI != "" && !strings.HasPrefix(c.MongoURI, "mongodb://") && !strings.HasPrefix(c.MongoURI, "mongodb+srv://") {
		errs = append(errs, errors.New("GRANTRY_MONGO_URI must start with mongodb:// or mongodb+srv://"))
	}
	if c.MongoURI == "" && c.DataDir == "" {
		errs = append(errs, errors.New("GRANTRY_DATA_DIR must be set when GRANTRY_MONGO_URI is empty"))
	}
	if strings.ContainsFunc(c.BootstrapAPIKey, isNotVisible) {
		errs = append(errs, errors.New("GRANTRY_BOOTSTRAP_API_KEY may hold only visible ASCII characters"))
	}
	if strings.ContainsFunc(c.AdminToken, isNotVisible) {
		errs = append(errs, errors.New("GRANTRY_ADMIN_TOKEN may hold only visible ASCII characters"))
	}
	if c.SecretKey != "" {
		if _, err := c.MasterKey(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.validateOperations()...)
	errs = append(errs, c.validateIntegrations()...)
	errs = append(errs, c.validateDecisionLog()...)
	errs = append(errs, c.validateCache()...)
	errs = append(errs, c.validateGateway()...)
	errs = append(errs, c.unparsed...)
	return errors.Join(errs...)
}

// MasterKey decodes GRANTRY_SECRET_KEY. It returns nil and no error when the setting is empty.
func (c Config) MasterKey() ([]byte, error) {
	if c.SecretKey == "" {
		return nil, nil
	}
	key, err := seal.ParseKey(c.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("GRANTRY_SECRET_KEY: %w", err)
	}
	return key, nil
}

// LogValue shows the settings without their secrets, only whether each is set.
func (c Config) LogValue() slog.Value {
	store := "embedded"
	if c.MongoURI != "" {
		store = "mongodb"
	}
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("store", store),
		slog.String("mongo_db", c.MongoDB),
		slog.String("data_dir", c.DataDir),
		slog.String("policy_dir", c.PolicyDir),
		slog.Bool("bootstrap_api_key_set", c.BootstrapAPIKey != ""),
		slog.Bool("admin_api", c.AdminToken != ""),
		slog.Bool("secret_key_set", c.SecretKey != ""),
		slog.String("request_timeout", c.RequestTimeout.String()),
		slog.String("shutdown_timeout", c.ShutdownTimeout.String()),
		slog.Float64("rate_limit", c.RateLimit),
		slog.Int("rate_burst", c.RateBurst),
		slog.Bool("secret_key_previous_set", c.SecretKeyPrevious != ""),
		slog.Any("integrations", c.Integrations),
		slog.Bool("decision_log", c.DecisionLog),
		slog.Int("decision_log_days", c.DecisionLogDays),
		slog.Int("cache_entries", c.CacheEntries),
		slog.Bool("preload", c.Preload),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("gateway_user_header", c.Gateway.UserHeader),
		slog.Bool("gateway_jwt", c.Gateway.JWT()),
		slog.String("extauthz_addr", c.Gateway.ExtAuthzAddr),
	)
}

func isNotVisible(r rune) bool { return r <= ' ' || r > '~' }
