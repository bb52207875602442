#!/usr/bin/env bash
# Idle CPU of a fresh `memd serve`: 60 s of utime+stime after a 100 s warm-up. Run from the repo root.
set -e
H=$(mktemp -d /tmp/idleXXXX); mkdir -p $H/tr
MEMD_HOME=$H/home MEMD_TRANSCRIPTS_DIR=$H/tr MEMD_SOCKET=$H/s.sock MEMD_CONFIG=$H/none.toml .venv/bin/memd serve --log-level WARNING 2>$H/log &
PID=$!
sleep 100
a=$(awk '{print $14+$15}' /proc/$PID/stat)
sleep 60
b=$(awk '{print $14+$15}' /proc/$PID/stat)
echo "idle CPU over 60 s (after 100 s warm-up): $(( (b-a) ))/6000 ticks = $(python3 -c "print(round(($b-$a)/60/$(getconf CLK_TCK)*100,2))") %"
kill -TERM $PID; wait $PID || true
