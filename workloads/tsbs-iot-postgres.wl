// TSBS iot against plain PostgreSQL: load the trucks' tags, readings and diagnostics with COPY,
// then the iot query types PostgreSQL's SQL can express (TSBS's TimescaleDB queries, with
// `date_bin` / `date_trunc` where TSBS uses `time_bucket`).
//
//   PGUSER=me PGPASSWORD=secret PGDATABASE=iot  wlrun workloads/tsbs-iot-postgres.wl
//   wlrun workloads/tsbs-iot-postgres.wl --param trucks=4000 --param per_query=1000   (TSBS's scale)
//
// The tables differ from TSBS's TimescaleDB format in one way: the tags are columns of
// readings and diagnostics (as in TSBS's QuestDB and Influx formats) rather than a `tags_id`
// into a tags table, so the queries filter and group on `fleet`, `name`, ... directly; the
// `tags` table is loaded too, with the same values (std/tsbs/iot.wl: `series from tags`).
// The indexes are TSBS's defaults for the two measurements: (name, time DESC) standing for
// (tags_id, time DESC), and (time DESC).

import "std/tsbs/iot.wl" as iot (trucks = trucks, start = start, end = start + 1d)

workload tsbs_iot_postgres {
  seed 123
  description "TSBS iot: load one day of trucks into PostgreSQL with COPY, then its query types"
}

param trucks    = 100                     // tsbs --scale
param start     = 2016-01-01T00:00:00Z    // tsbs --timestamp-start
param per_query = 20                      // instances of each query type
param workers   = 1                       // tsbs_run_queries --workers

target postgres {
  dialect postgres
  pg "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@127.0.0.1:5432/${env("PGDATABASE", "iot")}" {
    insert     copy
    statements prepared
  }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

ingest tags {
  into postgres via pg
  rows iot.tags
  setup recreate
  teardown keep
  verify visible within 60s
}

ingest readings {
  into postgres via pg
  rows iot.readings
  batch 10_000 rows
  setup recreate
  setup sql postgres "CREATE INDEX ON readings (name, time DESC)"
  setup sql postgres "CREATE INDEX ON readings (time DESC)"
  teardown keep
  verify visible within 60s
}

ingest diagnostics {
  into postgres via pg
  rows iot.diagnostics
  batch 10_000 rows
  setup recreate
  setup sql postgres "CREATE INDEX ON diagnostics (name, time DESC)"
  setup sql postgres "CREATE INDEX ON diagnostics (time DESC)"
  teardown keep
  verify visible within 60s
}

// last-loc: the last location of every truck of a fleet.
query last_loc {
  label "last-loc"
  sql "SELECT DISTINCT ON (name) name, driver, longitude, latitude
       FROM readings WHERE fleet = $1 AND name IS NOT NULL
       ORDER BY name, time DESC"
  bind $1 = sample(iot.tags.fleet, 1)
}

// single-last-loc: the last location of one truck.
query single_last_loc {
  label "single-last-loc"
  sql "SELECT name, driver, longitude, latitude FROM readings
       WHERE name = $1 ORDER BY time DESC LIMIT 1"
  bind $1 = format("truck_%d", uniform(0, trucks))
}

// low-fuel: the trucks of a fleet whose latest fuel_state is under 0.1.
query low_fuel {
  label "low-fuel"
  sql "SELECT name, driver, fuel_state FROM (
         SELECT DISTINCT ON (name) name, driver, fuel_state FROM diagnostics
         WHERE fleet = $1 AND name IS NOT NULL ORDER BY name, time DESC) latest
       WHERE fuel_state < 0.1"
  bind $1 = pick(["East", "West", "North", "South"])
}

// high-load: the trucks of a fleet whose latest load is over 90% of their capacity.
query high_load {
  label "high-load"
  sql "SELECT name, driver, current_load, load_capacity FROM (
         SELECT DISTINCT ON (name) name, driver, current_load, load_capacity FROM diagnostics
         WHERE fleet = $1 AND name IS NOT NULL ORDER BY name, time DESC) latest
       WHERE current_load / load_capacity > 0.9"
  bind $1 = pick(["East", "West", "North", "South"])
}

// stationary-trucks: the trucks of a fleet with an average velocity under 1 over 10 minutes.
query stationary_trucks {
  label "stationary-trucks"
  sql "SELECT name, driver FROM readings
       WHERE time >= $1 AND time < $2 AND fleet = $3 AND name IS NOT NULL
       GROUP BY name, driver HAVING avg(velocity) < 1"
  let w = window(start, start + 1d + 1s, 10m)
  bind $1 = w.start
  bind $2 = w.end
  bind $3 = pick(["East", "West", "North", "South"])
}

// long-driving-sessions: trucks that rested less than 20 minutes in 4 hours.
query long_driving_sessions {
  label "long-driving-sessions"
  sql "SELECT name, driver FROM (
         SELECT name, driver, date_bin('10 minutes', time, TIMESTAMPTZ '2000-01-01') AS ten_minutes
         FROM readings
         WHERE fleet = $1 AND time >= $2 AND time < $3 AND name IS NOT NULL
         GROUP BY name, driver, ten_minutes HAVING avg(velocity) > 1) driving
       GROUP BY name, driver HAVING count(ten_minutes) > 22"
  let w = window(start, start + 1d + 1s, 4h)
  bind $1 = pick(["East", "West", "North", "South"])
  bind $2 = w.start
  bind $3 = w.end
}

// long-daily-sessions: trucks that drove more than 10 hours in 24 hours.
query long_daily_sessions {
  label "long-daily-sessions"
  sql "SELECT name, driver FROM (
         SELECT name, driver, date_bin('10 minutes', time, TIMESTAMPTZ '2000-01-01') AS ten_minutes
         FROM readings
         WHERE fleet = $1 AND time >= $2 AND time < $3 AND name IS NOT NULL
         GROUP BY name, driver, ten_minutes HAVING avg(velocity) > 1) driving
       GROUP BY name, driver HAVING count(ten_minutes) > 60"
  let w = window(start, start + 1d + 1s, 24h)
  bind $1 = pick(["East", "West", "North", "South"])
  bind $2 = w.start
  bind $3 = w.end
}

// avg-vs-projected-fuel-consumption: actual against nominal fuel consumption, per fleet.
query avg_vs_projected_fuel_consumption {
  label "avg-vs-projected-fuel-consumption"
  sql "SELECT fleet, avg(fuel_consumption) AS avg_fuel_consumption,
              avg(nominal_fuel_consumption) AS projected_fuel_consumption
       FROM readings
       WHERE velocity > 1 AND fleet IS NOT NULL AND nominal_fuel_consumption IS NOT NULL
         AND name IS NOT NULL
       GROUP BY fleet"
}

// avg-daily-driving-duration: average daily driving hours per driver.
query avg_daily_driving_duration {
  label "avg-daily-driving-duration"
  sql "WITH ten_minute_driving_sessions AS (
         SELECT name, fleet, driver,
                date_bin('10 minutes', time, TIMESTAMPTZ '2000-01-01') AS ten_minutes
         FROM readings GROUP BY name, fleet, driver, ten_minutes HAVING avg(velocity) > 1),
       daily_total_session AS (
         SELECT name, fleet, driver, date_trunc('day', ten_minutes) AS day,
                count(*) / 6 AS hours
         FROM ten_minute_driving_sessions GROUP BY name, fleet, driver, day)
       SELECT fleet, name, driver, avg(hours) AS avg_daily_hours
       FROM daily_total_session GROUP BY fleet, name, driver"
}

// avg-daily-driving-session: the average length of a driving session per truck per day.
query avg_daily_driving_session {
  label "avg-daily-driving-session"
  sql "WITH driving_status AS (
         SELECT name, date_bin('10 minutes', time, TIMESTAMPTZ '2000-01-01') AS ten_minutes,
                avg(velocity) > 5 AS driving
         FROM readings GROUP BY name, ten_minutes),
       driving_status_change AS (
         SELECT name, ten_minutes AS start, driving,
                lag(driving) OVER (PARTITION BY name ORDER BY ten_minutes) AS previous
         FROM driving_status),
       sessions AS (
         SELECT name, start, driving, lead(start) OVER (PARTITION BY name ORDER BY start) AS stop
         FROM driving_status_change WHERE previous IS NOT NULL AND driving <> previous)
       SELECT name, date_trunc('day', start) AS day, avg(stop - start) AS duration
       FROM sessions WHERE driving AND name IS NOT NULL
       GROUP BY name, day ORDER BY name, day"
}

// avg-load: average load against capacity per fleet and model.
query avg_load {
  label "avg-load"
  sql "SELECT fleet, model, load_capacity, avg(avg_load / load_capacity) AS avg_load_percentage
       FROM (SELECT name, fleet, model, load_capacity, avg(current_load) AS avg_load
             FROM diagnostics WHERE name IS NOT NULL
             GROUP BY name, fleet, model, load_capacity) per_truck
       GROUP BY fleet, model, load_capacity"
}

// daily-activity: the daily active share per fleet and model (rows of 10-minute buckets whose
// average status is under 1, over 144 ten-minute periods a day, as TSBS counts them).
query daily_activity {
  label "daily-activity"
  sql "SELECT fleet, model, day, sum(ten_mins_per_day) / 144 AS daily_activity
       FROM (SELECT fleet, model, date_trunc('day', time) AS day,
                    date_bin('10 minutes', time, TIMESTAMPTZ '2000-01-01') AS ten_minutes,
                    count(*) AS ten_mins_per_day
             FROM diagnostics WHERE name IS NOT NULL
             GROUP BY fleet, model, day, ten_minutes HAVING avg(status) < 1) active
       GROUP BY fleet, model, day ORDER BY day"
}

// breakdown-frequency: transitions into a breakdown per model, as TSBS writes it (its
// `count(status = 0)` counts the rows whose status is not null).
query breakdown_frequency {
  label "breakdown-frequency"
  sql "WITH breakdown_per_truck_per_ten_minutes AS (
         SELECT name, model, date_bin('10 minutes', time, TIMESTAMPTZ '2000-01-01') AS ten_minutes,
                count(status = 0) / count(*) >= 0.5 AS broken_down
         FROM diagnostics WHERE name IS NOT NULL GROUP BY name, model, ten_minutes),
       breakdowns_per_truck AS (
         SELECT name, model, ten_minutes, broken_down,
                lead(broken_down) OVER (PARTITION BY name ORDER BY ten_minutes) AS next_broken_down
         FROM breakdown_per_truck_per_ten_minutes)
       SELECT model, count(*) FROM breakdowns_per_truck
       WHERE broken_down = false AND next_broken_down = true GROUP BY model"
}

run iot_queries {
  against postgres.pg
  queries last_loc, single_last_loc, low_fuel, high_load, stationary_trucks,
          long_driving_sessions, long_daily_sessions, avg_vs_projected_fuel_consumption,
          avg_daily_driving_duration, avg_daily_driving_session, avg_load, daily_activity,
          breakdown_frequency
  workers workers
  count per_query per query
  require rows(readings) > 0      // an empty table would make every query look fast
}
