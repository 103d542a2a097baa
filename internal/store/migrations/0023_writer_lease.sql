-- Who holds the writer lock (PostgreSQL: a session advisory lock; SQLite: an
-- flock on a file beside the database, which names its holder itself), so a
-- second ingesting process can say which process it found there.
CREATE TABLE IF NOT EXISTS writer_lease (
    id     INTEGER PRIMARY KEY,
    holder TEXT NOT NULL
);
