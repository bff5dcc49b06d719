package dbopen

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

func openServer(_ context.Context, dialect, _ string, _ Options) (*db.DB, error) {
	return nil, fmt.Errorf("%w: no %s driver built in", ErrUnsupported, dialect)
}
