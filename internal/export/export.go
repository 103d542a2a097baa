// Package export runs transaction-export operations: durable asynchronous
// jobs that write a CSV of an address set's history over a date range.
//
// A job is a row of export_jobs (migration 0012). Workers of every replica
// claim RUNNING jobs whose lease has expired with one conditional UPDATE, keep
// the lease alive while they work, and finish with an UPDATE fenced by the
// attempt number, so a job is finished by exactly one worker even when a
// worker stalls, crashes or loses its lease. Each attempt writes its own
// temporary file (the attempt number is in its name) and renames it into
// place only when complete: a resumed job never appends to a stale file.
//
// Rows stream from database cursors into the file, so memory stays constant
// whatever the export's size. A configured row cap ends an export at a day
// boundary (status COMPLETED_WITH_WARNING, code WarnTruncatedExport, and the
// nextDate to continue from); a day is never split between two files.
//
// Downloads are served by the API from the export directory through signed,
// expiring URLs (HMAC over the operation id and the expiry, with a key shared
// by the replicas through the meta table). Finished operations and their
// files are removed after the configured retention.
package export

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// OperationType is the kind of export (the OpenAPI OperationType).
type OperationType string

const (
	TypeEVM            OperationType = "TRANSACTION_EXPORT_EVM"
	TypePrimary        OperationType = "TRANSACTION_EXPORT_PRIMARY_NETWORK"
	TypePrimaryStaking OperationType = "TRANSACTION_EXPORT_PRIMARY_NETWORK_STAKING"
	TypePrimarySimple  OperationType = "TRANSACTION_EXPORT_PRIMARY_NETWORK_SIMPLE"
)

// Types lists every OperationType, EVM first.
var Types = []OperationType{TypeEVM, TypePrimary, TypePrimaryStaking, TypePrimarySimple}

// Primary reports whether t exports primary-network chains.
func (t OperationType) Primary() bool {
	return t == TypePrimary || t == TypePrimaryStaking || t == TypePrimarySimple
}

// Status is an operation's state (the OpenAPI OperationStatus).
type Status string

const (
	StatusRunning              Status = "RUNNING"
	StatusCompleted            Status = "COMPLETED"
	StatusCompletedWithWarning Status = "COMPLETED_WITH_WARNING"
	StatusFailed               Status = "FAILED"
)

// Codes of metadata.code (the OpenAPI OperationStatusCode).
const (
	CodeInvalidRequest = "ErrInvalidRequest"
	CodeInternal       = "ErrInternal"
	CodeTruncated      = "WarnTruncatedExport"
)

// Operation is the OpenAPI OperationStatusResponse.
type Operation struct {
	OperationID        string        `json:"operationId"`
	OperationType      OperationType `json:"operationType"`
	OperationStatus    Status        `json:"operationStatus"`
	Message            string        `json:"message,omitempty"`
	Metadata           *Metadata     `json:"metadata,omitempty"`
	CreatedAtTimestamp int64         `json:"createdAtTimestamp"`
	UpdatedAtTimestamp int64         `json:"updatedAtTimestamp"`
}

// Metadata is the OpenAPI TransactionExportMetadata.
type Metadata struct {
	Code        string `json:"code,omitempty"`
	DownloadURL string `json:"downloadUrl,omitempty"`
	NextDate    string `json:"nextDate,omitempty"`
}

// Config is the export service's configuration. Zero fields take the
// defaults documented on each (see WithDefaults).
type Config struct {
	// Dir holds the CSV files (created if missing). With several replicas
	// it must be one shared filesystem: any replica may write a job's file
	// and any may serve its download. Default ./data/exports.
	Dir string
	// PublicURL is the absolute base URL (http or https) clients reach this
	// server at; download URLs are built on it. Required.
	PublicURL string
	// RowCap ends an export at the day boundary before it would exceed this
	// many rows (COMPLETED_WITH_WARNING with nextDate). A day is never
	// split, so a first day larger than the cap is exported whole.
	// Default 1,000,000; negative: no cap.
	RowCap int64
	// Retention is how long a finished operation and its file are kept
	// (after which GET answers 404). Default 7 days.
	Retention time.Duration
	// Workers is the number of jobs this process runs at once. Default 2;
	// negative: none (a replica that only serves the API; others run the jobs).
	Workers int
	// URLTTL is the lifetime of a download URL (never beyond retention).
	// Default 1 hour.
	URLTTL time.Duration
	// Lease is how long a claimed job stays with its worker without a
	// heartbeat; a crashed worker's job is taken over after it. Default 30s.
	Lease time.Duration
	// Poll is how often idle workers look for jobs (jobs created through
	// this process wake them at once). Default 2s.
	Poll time.Duration
	// MaxAttempts is how many failed runs (errors, timeouts, vanished
	// workers) a job gets before it is FAILED with ErrInternal. Default 3.
	MaxAttempts int
	// JobTimeout bounds one run of a job. Default 1 hour.
	JobTimeout time.Duration
	// GCInterval is how often expired operations, their files and orphan
	// files are removed. Default 10 minutes.
	GCInterval time.Duration
}

// Defaults of Config.
const (
	DefaultDir         = "./data/exports"
	DefaultRowCap      = 1_000_000
	DefaultRetention   = 7 * 24 * time.Hour
	DefaultWorkers     = 2
	DefaultURLTTL      = time.Hour
	DefaultLease       = 30 * time.Second
	DefaultPoll        = 2 * time.Second
	DefaultMaxAttempts = 3
	DefaultJobTimeout  = time.Hour
	DefaultGCInterval  = 10 * time.Minute
)

// WithDefaults fills zero fields with the defaults.
func (c Config) WithDefaults() Config {
	// cmp.Or keeps a set field and fills a zero one.
	c.Dir = cmp.Or(c.Dir, DefaultDir)
	c.RowCap = cmp.Or(c.RowCap, DefaultRowCap)
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.URLTTL = cmp.Or(c.URLTTL, DefaultURLTTL)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.Poll = cmp.Or(c.Poll, DefaultPoll)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.JobTimeout = cmp.Or(c.JobTimeout, DefaultJobTimeout)
	c.GCInterval = cmp.Or(c.GCInterval, DefaultGCInterval)
	return c
}

// validate checks a configuration with defaults filled in.
func (c Config) validate() error {
	u, err := url.Parse(c.PublicURL)
	if c.PublicURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("export: PublicURL must be an absolute http(s) URL, got %q", c.PublicURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("export: PublicURL must not carry a query or fragment, got %q", c.PublicURL)
	}
	var errs []error
	for name, d := range map[string]time.Duration{"Retention": c.Retention, "URLTTL": c.URLTTL, "Lease": c.Lease,
		"Poll": c.Poll, "JobTimeout": c.JobTimeout, "GCInterval": c.GCInterval} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", name))
		}
	}
	if c.Lease > 0 && c.Lease < 3*time.Millisecond {
		errs = append(errs, errors.New("Lease is too short"))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, errors.New("MaxAttempts must be at least 1"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// publicBase is PublicURL without a trailing slash.
func (c Config) publicBase() string { return strings.TrimRight(c.PublicURL, "/") }
