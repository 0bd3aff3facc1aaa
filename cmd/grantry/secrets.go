package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/config"
	"github.com/grantry/grantry/internal/provider"
	"github.com/grantry/grantry/internal/seal"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/audit"
)

// keyFileName is the development master key's file in GRANTRY_DATA_DIR.
const keyFileName = "secret.key"

// openSealer returns the sealer of third-party secrets: GRANTRY_SECRET_KEY, or else the key in
// GRANTRY_DATA_DIR/secret.key, made on first use; the keys of GRANTRY_SECRET_KEY_PREVIOUS only
// open old secrets.
func openSealer(cfg config.Config, log *slog.Logger) (*seal.Sealer, error) {
	previous, err := cfg.PreviousMasterKeys()
	if err != nil {
		return nil, err
	}
	current, err := cfg.MasterKey()
	if err != nil {
		return nil, err
	}
	if current == nil {
		if cfg.DataDir == "" {
			return nil, errors.New("set GRANTRY_SECRET_KEY (or GRANTRY_DATA_DIR, for a development key kept in a file)")
		}
		path := filepath.Join(cfg.DataDir, keyFileName)
		var created bool
		if current, created, err = seal.LoadOrCreateKeyFile(path); err != nil {
			return nil, err
		}
		msg := "GRANTRY_SECRET_KEY is not set: third-party secrets are sealed with the development master key in this file; production and multi-replica deployments must set GRANTRY_SECRET_KEY"
		if created {
			msg = "GRANTRY_SECRET_KEY is not set, so a development master key for third-party secrets was generated into this file; production and multi-replica deployments must set GRANTRY_SECRET_KEY"
		}
		log.Warn(msg, "file", path)
	}
	sealer, err := seal.New(current, previous...)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return sealer, nil
}

// integrations builds the third-party providers from the settings.
func integrations(cfg config.Integrations, sealer *seal.Sealer) api.Integrations {
	return api.Integrations{
		ModelProviders: []api.ModelProvider{
			provider.NewOpenAI(cfg.OpenAIBaseURL),
			provider.NewAnthropic(cfg.AnthropicBaseURL),
		},
		VectorDBs: []api.VectorDB{
			provider.NewPinecone(cfg.PineconeBaseURL),
			provider.NewQdrant(cfg.QdrantBaseURL),
		},
		DefaultModelProvider: cfg.DefaultModelProvider,
		DefaultVectorDB:      cfg.DefaultVectorDBProvider,
		Sealer:               sealer,
	}
}

// secrets runs `grantry secrets rotate`: with the store of the same settings as serve, every
// stored secret not sealed under the current master key is opened (with it or a previous key)
// and sealed again under the current one. It prints counts, never a secret.
func secrets(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, secretsUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "rotate" {
		return fmt.Errorf("unknown or incomplete command %q\n%s", strings.Join(append([]string{"secrets"}, args...), " "), secretsUsage)
	}
	cfg, err := settings("secrets rotate", secretsUsage, args[1:], getenv, stdout)
	if err != nil {
		return err
	}
	log, lines := newLogger(stderr, cfg.LogLevel)
	defer lines.Close()
	sealer, err := openSealer(cfg, log)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := store.Close(closeCtx); err != nil {
			log.Error("close store", "error", err.Error())
		}
	}()

	// Through the audit trail, so that each re-sealed secret is recorded as rotated.
	res, err := rotate(ctx, audit.New(store, nil, log), sealer)
	fmt.Fprintf(stdout, "Re-sealed %d secrets under the current master key; %d already were, %d were removed meanwhile, %d could not be opened.\n",
		res.resealed, res.current, res.removed, len(res.failed))
	for _, f := range res.failed {
		fmt.Fprintf(stderr, "resource %s of organization %s: %v\n", f.id, f.orgID, f.err)
	}
	if err != nil {
		return err
	}
	if len(res.failed) > 0 {
		return fmt.Errorf("%d secrets could not be opened with GRANTRY_SECRET_KEY or GRANTRY_SECRET_KEY_PREVIOUS and were left as they were", len(res.failed))
	}
	return nil
}

// secretRotator is what rotate needs of a store.
type secretRotator interface {
	ResourcesWithSecrets(ctx context.Context) ([]storage.Resource, error)
	GetResource(ctx context.Context, orgID, id string) (storage.Resource, error)
	SwapSecret(ctx context.Context, orgID, id string, old, next []byte) error
}

type rotation struct {
	resealed, current, removed int
	failed                     []rotationFailure
}

type rotationFailure struct {
	orgID, id string
	err       error
}

// rotate re-seals every secret of store that is not sealed under sealer's current key. Each
// write replaces the secret only if it is still what was read, so a key integrated again
// meanwhile is never overwritten with the old one; that secret is read again and, unless it is
// now current, re-sealed in turn. A secret that does not open is reported and left as it is; a
// store error stops the rotation, which can simply be run again.
func rotate(ctx context.Context, store secretRotator, sealer *seal.Sealer) (rotation, error) {
	var res rotation
	rs, err := store.ResourcesWithSecrets(ctx)
	if err != nil {
		return res, err
	}
	for _, r := range rs {
		for attempt := 0; ; attempt++ {
			if sealer.IsCurrent(r.Secret) {
				res.current++
				break
			}
			plain, err := sealer.Open(r.Secret, r.OrgID, r.ID)
			if err != nil {
				res.failed = append(res.failed, rotationFailure{orgID: r.OrgID, id: r.ID, err: err})
				break
			}
			next, err := sealer.Seal(plain, r.OrgID, r.ID)
			clear(plain)
			if err != nil {
				return res, fmt.Errorf("re-seal the secret of resource %s: %w", r.ID, err)
			}
			err = store.SwapSecret(ctx, r.OrgID, r.ID, r.Secret, next)
			if errors.Is(err, storage.ErrConflict) && attempt < 3 {
				if r, err = store.GetResource(ctx, r.OrgID, r.ID); err == nil {
					continue
				}
			}
			switch {
			case errors.Is(err, storage.ErrNotFound):
				res.removed++
			case err != nil:
				return res, fmt.Errorf("rotate: %w", err)
			default:
				res.resealed++
			}
			break
		}
	}
	return res, nil
}
