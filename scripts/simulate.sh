#!/usr/bin/env bash
# The vantage-point protocol's simulation in its long mode: many seeds of n <= 5 vantage points
# (k <= 3) against an adversary holding k-1 keys and writing the shared medium, safety checked
# after every step and liveness every round (Tests/PinStorePublisherTests/VantagePointSimulation.swift).
#
#   scripts/simulate.sh [SEEDS] [FIRST_SEED]      # default 2000 seeds from 1
#
# A violation prints its seed; replay one with
#   PINSTORE_SIMULATION_SEED=<seed> PINSTORE_SIMULATION_LOG=1 swift test --filter VantagePointSimulation
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-2000}"
first="${2:-1}"
swift build --build-tests
PINSTORE_SIMULATION_SEEDS="$seeds" PINSTORE_SIMULATION_FIRST_SEED="$first" \
    swift test --skip-build --filter VantagePointSimulationTests.safetyAndLivenessHoldForEverySeed
