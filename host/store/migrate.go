package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/migrations"
	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratepg "github.com/golang-migrate/migrate/v4/database/postgres"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// migrator builds a golang-migrate runner on a connection pool of its own:
// golang-migrate closes the database it is given and holds a connection for
// its lifetime, which would starve SQLite's single-writer pool.
func (s *Store) migrator() (*migrate.Migrate, error) {
	src, err := iofs.New(migrations.FS, string(s.dialect))
	if err != nil {
		return nil, err
	}
	driverName := "postgres"
	if s.dialect == SQLite {
		driverName = "sqlite"
	}
	db, err := sql.Open(driverName, s.dsn())
	if err != nil {
		return nil, err
	}
	var drv database.Driver
	if s.dialect == Postgres {
		drv, err = migratepg.WithInstance(db, &migratepg.Config{})
	} else {
		drv, err = migratesqlite.WithInstance(db, &migratesqlite.Config{})
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("migration driver: %w", err)
	}
	return migrate.NewWithInstance("iofs", src, string(s.dialect), drv)
}

// SchemaVersion reports the database's schema version (0 when empty) and
// whether a migration was interrupted.
func (s *Store) SchemaVersion() (uint, bool, error) {
	m, err := s.migrator()
	if err != nil {
		return 0, false, err
	}
	defer m.Close()
	v, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return v, dirty, err
}

// MigrateUp applies every pending migration. It refuses a database whose
// schema is newer than this binary (a newer host migrated it: running an
// older one against it could corrupt data) or left dirty by a failed run.
func (s *Store) MigrateUp() error {
	if s.dialect == Postgres {
		// Hosts starting together on one database: one migrates, the
		// others wait here and then find the schema current. Without this
		// a host could read the version while another host's migration
		// is half-way (golang-migrate marks it dirty meanwhile) and refuse
		// to start.
		unlock, err := s.advisoryLock(migrationLockKey)
		if err != nil {
			return fmt.Errorf("wait for other hosts' migrations: %w", err)
		}
		defer unlock()
	}
	m, err := s.migrator()
	if err != nil {
		return err
	}
	defer m.Close()
	latest, err := LatestVersion(s.dialect)
	if err != nil {
		return err
	}
	v, dirty, err := m.Version()
	if err != nil && !errors.Is(err, migrate.ErrNilVersion) {
		return err
	}
	if dirty {
		return fmt.Errorf("the database schema is dirty at version %d (a migration failed half-way); fix it by hand, then run `agenthost migrate force`", v)
	}
	if v > latest {
		return fmt.Errorf("the database schema is at version %d, newer than this agenthost knows (%d); upgrade agenthost instead of running an older one against it", v, latest)
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// MigrateDown reverts the newest applied migration.
func (s *Store) MigrateDown() error {
	m, err := s.migrator()
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Steps(-1); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate down: %w", err)
	}
	return nil
}

// migrationLockKey is the PostgreSQL advisory lock agenthost hosts take
// around their migrations (golang-migrate takes one of its own inside).
const migrationLockKey = 0x6167656e74686f // "agentho"

// advisoryLock takes a session-level PostgreSQL advisory lock on a
// connection of its own, waiting for it; unlock releases it.
func (s *Store) advisoryLock(key int64) (unlock func(), err error) {
	ctx := context.Background()
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		conn.Close()
		return nil, err
	}
	return func() {
		_, _ = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, key)
		conn.Close()
	}, nil
}
