// TSBS cpu-only queries in plain PostgreSQL SQL: the same 16 query types, the same random draws
// and the same parameters as `queries-questdb.wl`, written for a single denormalized `cpu` table
// (the shape `std/tsbs/cpu-only.wl` loads: 10 tag columns, 10 metric columns, `timestamp`).
//
// Runs unchanged on vanilla PostgreSQL 15 and on TimescaleDB:
//   * buckets are `date_trunc('minute' | 'hour', "timestamp")` with GROUP BY and ORDER BY, the
//     portable equivalent of TimescaleDB's `time_bucket` in TSBS's TimescaleDB generator;
//   * lastpoint is `DISTINCT ON (hostname) ... ORDER BY hostname, "timestamp" DESC`, as TSBS's
//     TimescaleDB generator writes it;
//   * groupby-orderby-limit orders the minutes descending and keeps 5;
//   * `timestamp` is quoted because it is also a type name in PostgreSQL.
// Differences from TSBS's TimescaleDB queries: TSBS normalizes tags into a separate `tags` table
// joined by `tags_id`; here the hostname is a column of `cpu`, as in the QuestDB layout, so the
// two query sets read the same table.
//
// Draws: a window of fixed length first (`window(...)`: start uniform in [start, end - w],
// truncated to whole seconds), then k distinct random hosts (`sample(...)`). A host list is
// inlined into the SQL as `('host_1','host_7')`, hence `hostname IN $1`.
//
//   import "std/tsbs/queries-postgres.wl" as tsbsq (hosts = 4000)
//   run queries { against postgres.pg  queries tsbsq.*  count 1000 per query }

import "cpu-only.wl" as cpu (hosts = hosts, start = start)

param hosts = 4000                    // tsbs --scale: must match the loaded data
param start = 2016-01-01T00:00:00Z    // tsbs --timestamp-start
param end   = 2016-01-02T00:00:01Z    // tsbs --timestamp-end (one second past the data)

// ------------------------------------------------------------------------------------------------
// single-groupby-M-H-W: max of M metrics, H random hosts, a random W-hour window, 1-minute buckets.

query single_groupby_1_1_1 {
  label "PostgreSQL 1 cpu metric(s), random    1 hosts, random 1h0m0s by 1m"
  sql "SELECT date_trunc('minute', \"timestamp\") AS minute,
              max(usage_user) AS max_usage_user
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY minute
       ORDER BY minute"
  let w = window(start, end, 1h)
  bind $1 = sample(cpu.cpu.hostname, 1)
  bind $2 = w.start
  bind $3 = w.end
}

query single_groupby_1_1_12 {
  label "PostgreSQL 1 cpu metric(s), random    1 hosts, random 12h0m0s by 1m"
  sql "SELECT date_trunc('minute', \"timestamp\") AS minute,
              max(usage_user) AS max_usage_user
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY minute
       ORDER BY minute"
  let w = window(start, end, 12h)
  bind $1 = sample(cpu.cpu.hostname, 1)
  bind $2 = w.start
  bind $3 = w.end
}

query single_groupby_1_8_1 {
  label "PostgreSQL 1 cpu metric(s), random    8 hosts, random 1h0m0s by 1m"
  sql "SELECT date_trunc('minute', \"timestamp\") AS minute,
              max(usage_user) AS max_usage_user
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY minute
       ORDER BY minute"
  let w = window(start, end, 1h)
  bind $1 = sample(cpu.cpu.hostname, 8)
  bind $2 = w.start
  bind $3 = w.end
}

query single_groupby_5_1_1 {
  label "PostgreSQL 5 cpu metric(s), random    1 hosts, random 1h0m0s by 1m"
  sql "SELECT date_trunc('minute', \"timestamp\") AS minute,
              max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system,
              max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice,
              max(usage_iowait) AS max_usage_iowait
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY minute
       ORDER BY minute"
  let w = window(start, end, 1h)
  bind $1 = sample(cpu.cpu.hostname, 1)
  bind $2 = w.start
  bind $3 = w.end
}

query single_groupby_5_1_12 {
  label "PostgreSQL 5 cpu metric(s), random    1 hosts, random 12h0m0s by 1m"
  sql "SELECT date_trunc('minute', \"timestamp\") AS minute,
              max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system,
              max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice,
              max(usage_iowait) AS max_usage_iowait
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY minute
       ORDER BY minute"
  let w = window(start, end, 12h)
  bind $1 = sample(cpu.cpu.hostname, 1)
  bind $2 = w.start
  bind $3 = w.end
}

query single_groupby_5_8_1 {
  label "PostgreSQL 5 cpu metric(s), random    8 hosts, random 1h0m0s by 1m"
  sql "SELECT date_trunc('minute', \"timestamp\") AS minute,
              max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system,
              max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice,
              max(usage_iowait) AS max_usage_iowait
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY minute
       ORDER BY minute"
  let w = window(start, end, 1h)
  bind $1 = sample(cpu.cpu.hostname, 8)
  bind $2 = w.start
  bind $3 = w.end
}

// ------------------------------------------------------------------------------------------------
// cpu-max-all-H: max of all 10 metrics per hour for H random hosts over 8 hours (24 hours for the
// 32-host variant, whose TSBS label still says 8h0m0s because it prints a constant).

query cpu_max_all_1 {
  label "PostgreSQL max of all CPU metrics, random    1 hosts, random 8h0m0s by 1h"
  sql "SELECT date_trunc('hour', \"timestamp\") AS hour,
              max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system,
              max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice,
              max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq,
              max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal,
              max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY hour
       ORDER BY hour"
  let w = window(start, end, 8h)
  bind $1 = sample(cpu.cpu.hostname, 1)
  bind $2 = w.start
  bind $3 = w.end
}

query cpu_max_all_8 {
  label "PostgreSQL max of all CPU metrics, random    8 hosts, random 8h0m0s by 1h"
  sql "SELECT date_trunc('hour', \"timestamp\") AS hour,
              max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system,
              max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice,
              max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq,
              max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal,
              max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY hour
       ORDER BY hour"
  let w = window(start, end, 8h)
  bind $1 = sample(cpu.cpu.hostname, 8)
  bind $2 = w.start
  bind $3 = w.end
}

query cpu_max_all_32_24 {
  label "PostgreSQL max of all CPU metrics, random   32 hosts, random 8h0m0s by 1h"
  sql "SELECT date_trunc('hour', \"timestamp\") AS hour,
              max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system,
              max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice,
              max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq,
              max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal,
              max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice
       FROM cpu
       WHERE hostname IN $1 AND \"timestamp\" >= $2 AND \"timestamp\" < $3
       GROUP BY hour
       ORDER BY hour"
  let w = window(start, end, 24h)
  bind $1 = sample(cpu.cpu.hostname, 32)
  bind $2 = w.start
  bind $3 = w.end
}

// ------------------------------------------------------------------------------------------------
// double-groupby-M: mean of M metrics per host per hour, all hosts, a random 12-hour window.

query double_groupby_1 {
  label "PostgreSQL mean of 1 metrics, all hosts, random 12h0m0s by 1h"
  sql "SELECT date_trunc('hour', \"timestamp\") AS hour, hostname,
              avg(usage_user) AS avg_usage_user
       FROM cpu
       WHERE \"timestamp\" >= $1 AND \"timestamp\" < $2
       GROUP BY hour, hostname
       ORDER BY hour, hostname"
  let w = window(start, end, 12h)
  bind $1 = w.start
  bind $2 = w.end
}

query double_groupby_5 {
  label "PostgreSQL mean of 5 metrics, all hosts, random 12h0m0s by 1h"
  sql "SELECT date_trunc('hour', \"timestamp\") AS hour, hostname,
              avg(usage_user) AS avg_usage_user, avg(usage_system) AS avg_usage_system,
              avg(usage_idle) AS avg_usage_idle, avg(usage_nice) AS avg_usage_nice,
              avg(usage_iowait) AS avg_usage_iowait
       FROM cpu
       WHERE \"timestamp\" >= $1 AND \"timestamp\" < $2
       GROUP BY hour, hostname
       ORDER BY hour, hostname"
  let w = window(start, end, 12h)
  bind $1 = w.start
  bind $2 = w.end
}

query double_groupby_all {
  label "PostgreSQL mean of 10 metrics, all hosts, random 12h0m0s by 1h"
  sql "SELECT date_trunc('hour', \"timestamp\") AS hour, hostname,
              avg(usage_user) AS avg_usage_user, avg(usage_system) AS avg_usage_system,
              avg(usage_idle) AS avg_usage_idle, avg(usage_nice) AS avg_usage_nice,
              avg(usage_iowait) AS avg_usage_iowait, avg(usage_irq) AS avg_usage_irq,
              avg(usage_softirq) AS avg_usage_softirq, avg(usage_steal) AS avg_usage_steal,
              avg(usage_guest) AS avg_usage_guest, avg(usage_guest_nice) AS avg_usage_guest_nice
       FROM cpu
       WHERE \"timestamp\" >= $1 AND \"timestamp\" < $2
       GROUP BY hour, hostname
       ORDER BY hour, hostname"
  let w = window(start, end, 12h)
  bind $1 = w.start
  bind $2 = w.end
}

// ------------------------------------------------------------------------------------------------
// high-cpu: every raw row with usage_user > 90 in a random 12-hour window, for one host or all.

query high_cpu_1 {
  label "PostgreSQL CPU over threshold, 1 host(s)"
  sql "SELECT *
       FROM cpu
       WHERE usage_user > 90.0 AND hostname IN $1
         AND \"timestamp\" >= $2 AND \"timestamp\" < $3"
  let w = window(start, end, 12h)
  bind $1 = sample(cpu.cpu.hostname, 1)
  bind $2 = w.start
  bind $3 = w.end
}

query high_cpu_all {
  label "PostgreSQL CPU over threshold, all hosts"
  sql "SELECT *
       FROM cpu
       WHERE usage_user > 90.0 AND \"timestamp\" >= $1 AND \"timestamp\" < $2"
  let w = window(start, end, 12h)
  bind $1 = w.start
  bind $2 = w.end
}

// ------------------------------------------------------------------------------------------------
// lastpoint: the latest row of every host. No parameters and no random draws.

query lastpoint {
  label "PostgreSQL last row per host"
  sql "SELECT DISTINCT ON (hostname) *
       FROM cpu
       ORDER BY hostname, \"timestamp\" DESC"
}

// ------------------------------------------------------------------------------------------------
// groupby-orderby-limit: max(usage_user) of the last 5 minutes before a random end. TSBS draws a
// 1-hour window and uses only its end.

query groupby_orderby_limit {
  label "PostgreSQL max cpu over last 5 min-intervals (random end)"
  sql "SELECT date_trunc('minute', \"timestamp\") AS minute, max(usage_user) AS max_usage_user
       FROM cpu
       WHERE \"timestamp\" < $1
       GROUP BY minute
       ORDER BY minute DESC
       LIMIT 5"
  let w = window(start, end, 1h)
  bind $1 = w.end
}
