// Numbered migrations; PRAGMA user_version holds the last one applied. Never edit a released
// migration: add the next number.

export interface Migration {
  version: number
  name: string
  sql: string
}

/**
 * The name a task is searched by (task_names): the URL, or the file name (the target after its
 * last '/'); for a member of a submitted archive, then a line break and the archive's name (the
 * value of option `archive`, up to the next ',').
 */
function TASK_NAME(row: string): string {
  const base = `CASE WHEN ${row}.category = 'url' THEN ${row}.target
    ELSE substr(${row}.target, length(rtrim(${row}.target, replace(${row}.target, '/', ''))) + 1) END`
  const rest = `substr(',' || ${row}.options || ',', instr(',' || ${row}.options || ',', ',archive=') + 9)`
  return `${base} || CASE WHEN ${row}.category = 'archive' AND instr(',' || ${row}.options || ',', ',archive=') > 0
    THEN char(10) || substr(${rest}, 1, instr(${rest}, ',') - 1) ELSE '' END`
}

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'tasks, samples, machines, submits',
    sql: `
      CREATE TABLE samples (
        id        INTEGER PRIMARY KEY,
        file_size INTEGER NOT NULL,
        file_type TEXT,
        md5       TEXT NOT NULL,
        crc32     TEXT NOT NULL,
        sha1      TEXT NOT NULL,
        sha256    TEXT NOT NULL UNIQUE,
        sha512    TEXT NOT NULL,
        ssdeep    TEXT,
        added_on  TEXT NOT NULL
      );
      CREATE INDEX samples_md5 ON samples(md5);
      CREATE INDEX samples_sha1 ON samples(sha1);
      CREATE INDEX samples_sha512 ON samples(sha512);

      CREATE TABLE machines (
        id                INTEGER PRIMARY KEY,
        name              TEXT NOT NULL UNIQUE,
        label             TEXT NOT NULL,
        platform          TEXT NOT NULL,
        ip                TEXT NOT NULL,
        tags              TEXT NOT NULL DEFAULT '[]',
        snapshot          TEXT,
        interface         TEXT,
        resultserver_ip   TEXT NOT NULL,
        resultserver_port INTEGER NOT NULL,
        driver            TEXT NOT NULL,
        options           TEXT NOT NULL DEFAULT '[]',
        locked            INTEGER NOT NULL DEFAULT 0,
        locked_changed_on TEXT,
        status            TEXT,
        status_changed_on TEXT,
        configured        INTEGER NOT NULL DEFAULT 1
      );

      CREATE TABLE submits (
        id       INTEGER PRIMARY KEY AUTOINCREMENT,
        added_on TEXT NOT NULL
      );

      -- AUTOINCREMENT: a deleted task's id is never handed out again, so an analysis folder
      -- or a dispatcher's record of an old id can never be mistaken for a new task.
      CREATE TABLE tasks (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        category        TEXT NOT NULL,
        target          TEXT NOT NULL,
        sample_id       INTEGER REFERENCES samples(id),
        package         TEXT,
        timeout         INTEGER NOT NULL DEFAULT 0,
        priority        INTEGER NOT NULL DEFAULT 1,
        options         TEXT,
        machine         TEXT,
        platform        TEXT,
        tags            TEXT NOT NULL DEFAULT '[]',
        custom          TEXT,
        owner           TEXT NOT NULL DEFAULT '',
        memory          INTEGER NOT NULL DEFAULT 0,
        enforce_timeout INTEGER NOT NULL DEFAULT 0,
        clock           TEXT NOT NULL,
        added_on        TEXT NOT NULL,
        started_on      TEXT,
        completed_on    TEXT,
        status          TEXT NOT NULL DEFAULT 'pending',
        submit_id       INTEGER REFERENCES submits(id),
        route           TEXT,
        processing      TEXT,
        errors          TEXT NOT NULL DEFAULT '[]'
      );
      -- /tasks/list order: unfinished first by id (NULL sorts first), then by completion.
      CREATE INDEX tasks_list ON tasks(completed_on, id);
      CREATE INDEX tasks_status_list ON tasks(status, completed_on, id);
      CREATE INDEX tasks_sample ON tasks(sample_id);
      CREATE INDEX tasks_queue ON tasks(status, priority DESC, id);

      -- Each task as the API shows it, kept current by triggers: /tasks/view and /tasks/list
      -- send these strings as they are, instead of joining and serializing on every request.
      -- The one definition of a task's JSON is the view below.
      CREATE VIEW task_api_json AS
      SELECT t.id AS id, json_object(
        'added_on', t.added_on, 'category', t.category, 'clock', t.clock, 'completed_on', t.completed_on,
        'custom', t.custom,
        'duration', CASE WHEN t.started_on IS NULL OR t.completed_on IS NULL THEN -1
                         ELSE unixepoch(t.completed_on) - unixepoch(t.started_on) END,
        'enforce_timeout', json(CASE WHEN t.enforce_timeout THEN 'true' ELSE 'false' END),
        'errors', json(t.errors), 'guest', json_object(), 'id', t.id, 'machine', t.machine,
        'memory', json(CASE WHEN t.memory THEN 'true' ELSE 'false' END), 'options', t.options,
        'owner', t.owner, 'package', t.package, 'platform', t.platform, 'priority', t.priority,
        'processing', t.processing, 'route', t.route,
        'sample', CASE WHEN s.id IS NULL THEN json_object() ELSE json_object(
          'crc32', s.crc32, 'file_size', s.file_size, 'file_type', s.file_type, 'id', s.id, 'md5', s.md5,
          'sha1', s.sha1, 'sha256', s.sha256, 'sha512', s.sha512, 'ssdeep', s.ssdeep) END,
        'sample_id', t.sample_id, 'started_on', t.started_on, 'status', t.status, 'submit_id', t.submit_id,
        'tags', json(t.tags), 'target', t.target, 'timeout', t.timeout) AS json
      FROM tasks t LEFT JOIN samples s ON s.id = t.sample_id;

      CREATE TABLE task_json (
        id   INTEGER PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
        json TEXT NOT NULL
      );
      CREATE TRIGGER task_json_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO task_json (id, json) SELECT id, json FROM task_api_json WHERE id = NEW.id;
      END;
      CREATE TRIGGER task_json_update AFTER UPDATE ON tasks BEGIN
        UPDATE task_json SET json = (SELECT json FROM task_api_json WHERE id = NEW.id) WHERE id = NEW.id;
      END;
      CREATE TRIGGER task_json_sample AFTER UPDATE ON samples BEGIN
        UPDATE task_json SET json = (SELECT json FROM task_api_json WHERE id = task_json.id)
        WHERE id IN (SELECT id FROM tasks WHERE sample_id = NEW.id);
      END;
    `
  },
  {
    version: 2,
    name: 'the engine: guests, timeline, attempts',
    sql: `
      -- How many times a task was started: a task left running by a crash is re-queued once.
      ALTER TABLE tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;

      -- One row per run of a task on a machine (Cuckoo's guests table): the task's "guest" object.
      CREATE TABLE guests (
        id          INTEGER PRIMARY KEY,
        task_id     INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        machine_id  INTEGER REFERENCES machines(id),
        name        TEXT NOT NULL,
        label       TEXT NOT NULL,
        manager     TEXT NOT NULL,
        status      TEXT NOT NULL,
        started_on  TEXT NOT NULL,
        shutdown_on TEXT
      );
      CREATE INDEX guests_task ON guests(task_id);

      -- The live timeline: every stage of a task with its time (epoch milliseconds).
      CREATE TABLE task_events (
        id      INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        at      INTEGER NOT NULL,
        stage   TEXT NOT NULL,
        message TEXT
      );
      CREATE INDEX task_events_task ON task_events(task_id, id);
      -- Every task is queued when it is inserted, whichever code path inserts it.
      CREATE TRIGGER task_events_queued AFTER INSERT ON tasks BEGIN
        INSERT INTO task_events (task_id, at, stage, message)
        VALUES (NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER), 'queued', NULL);
      END;

      DROP VIEW task_api_json;
      CREATE VIEW task_api_json AS
      SELECT t.id AS id, json_object(
        'added_on', t.added_on, 'category', t.category, 'clock', t.clock, 'completed_on', t.completed_on,
        'custom', t.custom,
        'duration', CASE WHEN t.started_on IS NULL OR t.completed_on IS NULL THEN -1
                         ELSE unixepoch(t.completed_on) - unixepoch(t.started_on) END,
        'enforce_timeout', json(CASE WHEN t.enforce_timeout THEN 'true' ELSE 'false' END),
        'errors', json(t.errors),
        'guest', coalesce((SELECT json_object('id', g.id, 'label', g.label, 'manager', g.manager, 'name', g.name,
            'shutdown_on', g.shutdown_on, 'started_on', g.started_on, 'status', g.status, 'task_id', g.task_id)
          FROM guests g WHERE g.task_id = t.id ORDER BY g.id DESC LIMIT 1), json_object()),
        'id', t.id, 'machine', t.machine,
        'memory', json(CASE WHEN t.memory THEN 'true' ELSE 'false' END), 'options', t.options,
        'owner', t.owner, 'package', t.package, 'platform', t.platform, 'priority', t.priority,
        'processing', t.processing, 'route', t.route,
        'sample', CASE WHEN s.id IS NULL THEN json_object() ELSE json_object(
          'crc32', s.crc32, 'file_size', s.file_size, 'file_type', s.file_type, 'id', s.id, 'md5', s.md5,
          'sha1', s.sha1, 'sha256', s.sha256, 'sha512', s.sha512, 'ssdeep', s.ssdeep) END,
        'sample_id', t.sample_id, 'started_on', t.started_on, 'status', t.status, 'submit_id', t.submit_id,
        'tags', json(t.tags), 'target', t.target, 'timeout', t.timeout) AS json
      FROM tasks t LEFT JOIN samples s ON s.id = t.sample_id;

      CREATE TRIGGER task_json_guest_insert AFTER INSERT ON guests BEGIN
        UPDATE task_json SET json = (SELECT json FROM task_api_json WHERE id = NEW.task_id) WHERE id = NEW.task_id;
      END;
      CREATE TRIGGER task_json_guest_update AFTER UPDATE ON guests BEGIN
        UPDATE task_json SET json = (SELECT json FROM task_api_json WHERE id = NEW.task_id) WHERE id = NEW.task_id;
      END;
    `
  },
  {
    version: 3,
    name: 'the UI: scores and stats',
    sql: `
      -- report.json's info.score, stored when processing writes the report (the task list shows it).
      ALTER TABLE tasks ADD COLUMN score REAL;
      -- Tasks added per day (GET /aviary/stats); counts by status and tasks finished per day
      -- come from tasks_status_list (status, completed_on, id) alone.
      CREATE INDEX tasks_added ON tasks(added_on);
    `
  },
  {
    // Saved connections (src/core/connections): a separate entry from the UI's migration 3.
    version: 4,
    name: 'saved connections to remote instances and dispatchers',
    sql: `
      -- The UI reaches these through the local service's proxy: the token stays here, never in a page.
      CREATE TABLE connections (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        name       TEXT NOT NULL,
        url        TEXT NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('analysis', 'dispatcher')),
        token      TEXT,
        created_on TEXT NOT NULL
      );
    `
  },
  {
    // The task search (db/task-search.ts, docs/api.md "Searching tasks").
    version: 5,
    name: 'the search index: report terms, task names, score order',
    sql: `
      -- What analysts look for in a report (domains and their parent domains, IPs, URLs, signature
      -- names, dropped files' hashes), written by processing from the report it has in memory
      -- (db/task-terms.repository.ts), replaced on a rereport, gone with the task; and the task's
      -- tags (kind 'tag', written by the triggers below at insert). The primary key keeps a term
      -- once per task; task_terms_term finds the tasks of a term.
      CREATE TABLE task_terms (
        task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        kind    TEXT NOT NULL CHECK (kind IN ('domain', 'ip', 'url', 'sig', 'hash', 'tag')),
        term    TEXT NOT NULL,
        PRIMARY KEY (task_id, kind, term)
      ) WITHOUT ROWID;
      CREATE INDEX task_terms_term ON task_terms(term, kind, task_id);
      -- The cascade's work, also for a connection that does not enable foreign keys (a script): a
      -- term never names a task that is gone, so a term's task count is read from this index alone.
      CREATE TRIGGER task_terms_delete AFTER DELETE ON tasks BEGIN
        DELETE FROM task_terms WHERE task_id = OLD.id;
      END;
      -- A task's tags as terms (ASCII lower case, at most 512 characters), so tag: is an index
      -- lookup; tags are JSON written by the create routes, anything else is skipped, never refused.
      INSERT OR IGNORE INTO task_terms (task_id, kind, term)
        SELECT t.id, 'tag', lower(j.value) FROM tasks t, json_each(CASE WHEN json_valid(t.tags) THEN t.tags ELSE '[]' END) j
        WHERE j.type = 'text' AND length(j.value) BETWEEN 1 AND 512;
      CREATE TRIGGER task_terms_tags_insert AFTER INSERT ON tasks BEGIN
        INSERT OR IGNORE INTO task_terms (task_id, kind, term)
          SELECT NEW.id, 'tag', lower(value) FROM json_each(CASE WHEN json_valid(NEW.tags) THEN NEW.tags ELSE '[]' END)
          WHERE type = 'text' AND length(value) BETWEEN 1 AND 512;
      END;
      CREATE TRIGGER task_terms_tags_update AFTER UPDATE OF tags ON tasks BEGIN
        DELETE FROM task_terms WHERE task_id = NEW.id AND kind = 'tag';
        INSERT OR IGNORE INTO task_terms (task_id, kind, term)
          SELECT NEW.id, 'tag', lower(value) FROM json_each(CASE WHEN json_valid(NEW.tags) THEN NEW.tags ELSE '[]' END)
          WHERE type = 'text' AND length(value) BETWEEN 1 AND 512;
      END;

      -- A task's name as the list shows it (the URL, or the file name: the target after its last
      -- '/'), for substring search in any case: FTS5's trigram index. Kept by plain SQL triggers,
      -- so a task is findable whichever connection wrote it; nothing here calls back into JS.
      CREATE VIRTUAL TABLE task_names USING fts5(name, tokenize = 'trigram');
      INSERT INTO task_names (rowid, name)
        SELECT id, CASE WHEN category = 'url' THEN target
                        ELSE substr(target, length(rtrim(target, replace(target, '/', ''))) + 1) END
        FROM tasks;
      CREATE TRIGGER task_names_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO task_names (rowid, name) VALUES (NEW.id, CASE WHEN NEW.category = 'url' THEN NEW.target
          ELSE substr(NEW.target, length(rtrim(NEW.target, replace(NEW.target, '/', ''))) + 1) END);
      END;
      CREATE TRIGGER task_names_update AFTER UPDATE OF category, target ON tasks BEGIN
        UPDATE task_names SET name = CASE WHEN NEW.category = 'url' THEN NEW.target
          ELSE substr(NEW.target, length(rtrim(NEW.target, replace(NEW.target, '/', ''))) + 1) END
        WHERE rowid = NEW.id;
      END;
      CREATE TRIGGER task_names_delete AFTER DELETE ON tasks BEGIN
        DELETE FROM task_names WHERE rowid = OLD.id;
      END;

      -- The task list sorted by score (NULL, no report yet, sorts lowest; ties by id), filtered by
      -- status or category on the way.
      CREATE INDEX tasks_score ON tasks(score, id, status, category);
      -- A narrow copy of what a search filters and sorts on, in id order: scanned instead of the
      -- table's wide rows (5 times less to read at 100,000 tasks).
      CREATE INDEX tasks_search ON tasks(id, status, category, score, added_on, sample_id, machine, tags);
      -- machine: finds the tasks that asked for a machine, and those it ran.
      CREATE INDEX tasks_machine ON tasks(machine COLLATE NOCASE);
      CREATE INDEX guests_name ON guests(name COLLATE NOCASE);
      CREATE INDEX guests_label ON guests(label COLLATE NOCASE);
    `
  },
  {
    // Events from one place (events/event-bus.ts, ARCHITECTURE.md "Events").
    version: 6,
    name: 'the change journal the event bus reads',
    sql: `
      -- One row per change of a task, a machine or a task's timeline, written by the triggers below
      -- inside the transaction that makes the change, whichever connection makes it (the service, a
      -- second process, a script): a change rolled back leaves no row, and rows are committed in
      -- seq order. AUTOINCREMENT: a seq is never handed out twice, even after old rows are deleted.
      -- ref is the task (task, deleted, queued), the task_events row (stage) or the machine.
      CREATE TABLE change_journal (
        seq  INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('task', 'deleted', 'queued', 'stage', 'machine')),
        ref  INTEGER NOT NULL
      );
      -- task_json changes with the task, its guest or its sample (the triggers of migrations 1, 2).
      CREATE TRIGGER change_task_insert AFTER INSERT ON task_json BEGIN
        INSERT INTO change_journal (kind, ref) VALUES ('task', NEW.id);
      END;
      CREATE TRIGGER change_task_update AFTER UPDATE ON task_json BEGIN
        INSERT INTO change_journal (kind, ref) VALUES ('task', NEW.id);
      END;
      CREATE TRIGGER change_task_delete AFTER DELETE ON tasks BEGIN
        INSERT INTO change_journal (kind, ref) VALUES ('deleted', OLD.id);
      END;
      -- A task became pending: submitted, a reschedule's copy, re-queued (the scheduler's cue).
      CREATE TRIGGER change_queued_insert AFTER INSERT ON tasks WHEN NEW.status = 'pending' BEGIN
        INSERT INTO change_journal (kind, ref) VALUES ('queued', NEW.id);
      END;
      CREATE TRIGGER change_queued_update AFTER UPDATE OF status ON tasks
        WHEN NEW.status = 'pending' AND OLD.status IS NOT 'pending' BEGIN
        INSERT INTO change_journal (kind, ref) VALUES ('queued', NEW.id);
      END;
      CREATE TRIGGER change_stage AFTER INSERT ON task_events BEGIN
        INSERT INTO change_journal (kind, ref) VALUES ('stage', NEW.id);
      END;
      CREATE TRIGGER change_machine AFTER UPDATE ON machines BEGIN
        INSERT INTO change_journal (kind, ref) VALUES ('machine', NEW.id);
      END;
    `
  },
  {
    // The reports written before the search index (search/backfill.ts).
    version: 7,
    name: 'the reports the search index has not read yet',
    sql: `
      -- Tasks reported before migration 5 have no report terms: they are indexed once, in the
      -- background, from their report.json. A task leaves this table when it is indexed, by the
      -- backfill or by processing (a rereport), or when it is deleted. Reported tasks without a
      -- report term may also be ones whose report named nothing to find: they are read once more.
      CREATE TABLE search_backfill (
        task_id INTEGER PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE
      );
      INSERT INTO search_backfill (task_id)
        SELECT id FROM tasks WHERE status = 'reported'
          AND NOT EXISTS (SELECT 1 FROM task_terms WHERE task_id = tasks.id AND kind <> 'tag');
      CREATE TRIGGER search_backfill_delete AFTER DELETE ON tasks BEGIN
        DELETE FROM search_backfill WHERE task_id = OLD.id;
      END;
    `
  },
  {
    // Search terms for what a run touched, and archives found by their name (docs/api.md "Searching tasks").
    version: 8,
    name: 'search: files, commands, mutexes, registry keys; an archive member by its archive',
    sql: `
      -- task_terms takes the kinds of the behavior summary (file paths and names, command lines,
      -- mutexes, registry keys): SQLite cannot change a CHECK, so the table is made again, with
      -- its rows, index and the triggers that name it.
      DROP TRIGGER task_terms_delete;
      DROP TRIGGER task_terms_tags_insert;
      DROP TRIGGER task_terms_tags_update;
      CREATE TABLE task_terms_v8 (
        task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        kind    TEXT NOT NULL CHECK (kind IN ('domain', 'ip', 'url', 'sig', 'hash', 'tag', 'file', 'command', 'mutex', 'key')),
        term    TEXT NOT NULL,
        PRIMARY KEY (task_id, kind, term)
      ) WITHOUT ROWID;
      INSERT INTO task_terms_v8 (task_id, kind, term) SELECT task_id, kind, term FROM task_terms;
      DROP TABLE task_terms;
      ALTER TABLE task_terms_v8 RENAME TO task_terms;
      CREATE INDEX task_terms_term ON task_terms(term, kind, task_id);
      CREATE TRIGGER task_terms_delete AFTER DELETE ON tasks BEGIN
        DELETE FROM task_terms WHERE task_id = OLD.id;
      END;
      CREATE TRIGGER task_terms_tags_insert AFTER INSERT ON tasks BEGIN
        INSERT OR IGNORE INTO task_terms (task_id, kind, term)
          SELECT NEW.id, 'tag', lower(value) FROM json_each(CASE WHEN json_valid(NEW.tags) THEN NEW.tags ELSE '[]' END)
          WHERE type = 'text' AND length(value) BETWEEN 1 AND 512;
      END;
      CREATE TRIGGER task_terms_tags_update AFTER UPDATE OF tags ON tasks BEGIN
        DELETE FROM task_terms WHERE task_id = NEW.id AND kind = 'tag';
        INSERT OR IGNORE INTO task_terms (task_id, kind, term)
          SELECT NEW.id, 'tag', lower(value) FROM json_each(CASE WHEN json_valid(NEW.tags) THEN NEW.tags ELSE '[]' END)
          WHERE type = 'text' AND length(value) BETWEEN 1 AND 512;
      END;
      -- Reports already indexed are read once more, in the background, for the new kinds.
      INSERT OR IGNORE INTO search_backfill (task_id) SELECT id FROM tasks WHERE status = 'reported';

      -- A member of a submitted archive is found by the archive's name too: its indexed name is
      -- the member's, a line break, and the archive's (option archive=, written by the submit).
      DROP TRIGGER task_names_insert;
      DROP TRIGGER task_names_update;
      CREATE TRIGGER task_names_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO task_names (rowid, name) VALUES (NEW.id, ${TASK_NAME('NEW')});
      END;
      CREATE TRIGGER task_names_update AFTER UPDATE OF category, target, options ON tasks BEGIN
        UPDATE task_names SET name = ${TASK_NAME('NEW')} WHERE rowid = NEW.id;
      END;
    `
  }
]
