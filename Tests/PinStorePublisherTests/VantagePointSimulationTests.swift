import Foundation
import Testing
import PinStoreTesting
@testable import PinStorePublisher

/// The vantage-point protocol under attack, in simulation: a bounded number of seeds here; set
/// `PINSTORE_SIMULATION_SEEDS` for more (`scripts/simulate.sh` runs thousands), or
/// `PINSTORE_SIMULATION_SEED` to replay one that failed.
@Suite struct VantagePointSimulationTests {
    static let pki = Result { try TestPKI(hosts: ["localhost"]) }

    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let one = environment["PINSTORE_SIMULATION_SEED"].flatMap(UInt64.init) { return [one] }
        let count = environment["PINSTORE_SIMULATION_SEEDS"].flatMap(Int.init) ?? 16
        let first = environment["PINSTORE_SIMULATION_FIRST_SEED"].flatMap(UInt64.init) ?? 1
        return (0..<UInt64(max(count, 1))).map { first + $0 }
    }

    /// Safety after every step, and liveness where k honest vantage points see the partner:
    /// every one of them has the real pin in force within two rounds of the rules being met
    /// (K = 3 sightings over 20 minutes: met in round 3), and the partner's unannounced new leaf
    /// (round 5) within two rounds too, whatever the adversary proposes (the old list again).
    @Test func safetyAndLivenessHoldForEverySeed() async throws {
        let pki = try Self.pki.get()
        var failures: [String] = []
        for seed in Self.seeds {
            let configuration = VantagePointSimulation.Configuration.from(seed: seed)
            let simulation = try VantagePointSimulation(configuration, pki: pki)
            defer { simulation.cleanUp() }
            await simulation.run()
            for violation in simulation.violations {
                failures.append("\(configuration): \(violation) (replay: PINSTORE_SIMULATION_SEED=\(seed) swift test --filter VantagePointSimulation)")
            }
            if configuration.livenessApplies, (simulation.realPinEverywhereAtRound ?? .max) > 5 {
                failures.append("\(configuration): liveness: the honest vantage points had the real pin \(simulation.realPinEverywhereAtRound.map { "only at round \($0)" } ?? "never") (replay: PINSTORE_SIMULATION_SEED=\(seed) swift test --filter VantagePointSimulation)")
            }
            // The unannounced rotation at round 5: K = 3 over 20 minutes is met at round 7 (a
            // lone publisher); agreement publishes it at once where k is 2 or more.
            if configuration.livenessApplies, (simulation.nextPinEverywhereAtRound ?? .max) > simulation.rotationRound + 2 {
                failures.append("\(configuration): liveness: the honest vantage points had the rotated pin \(simulation.nextPinEverywhereAtRound.map { "only at round \($0)" } ?? "never") (replay: PINSTORE_SIMULATION_SEED=\(seed) swift test --filter VantagePointSimulation)")
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// A persistent adversary (k-1 keys) that proposes the old list afresh before every round,
    /// to hold back the partner's new pin: the honest vantage points publish it all the same.
    @Test(arguments: [(3, 2), (5, 3), (4, 2)])
    func anAdversaryLeavingOutTheNewPinEveryRoundDoesNotHoldItBack(n: Int, k: Int) async throws {
        let pki = try Self.pki.get()
        let configuration = VantagePointSimulation.Configuration(seed: 1_000 + UInt64(n * 10 + k), n: n, k: k, compromised: Set(0..<(k - 1)),
                                                                 intercepted: [], rounds: 8)
        let simulation = try VantagePointSimulation(configuration, pki: pki, favourite: .leaveOutNewPin)
        defer { simulation.cleanUp() }
        await simulation.run()
        #expect(simulation.violations.isEmpty, "\(simulation.violations)")
        let round = try #require(simulation.nextPinEverywhereAtRound, "\(configuration): the rotated pin never reached every honest vantage point")
        #expect(round <= simulation.rotationRound + 2)
    }

    /// The simulation's checks can fail: an honest vantage point made to sign anything (its
    /// review bypassed by signing the impostor's proposal with its key too) is caught.
    @Test func theSafetyCheckCatchesAListTheHonestDidNotAccept() async throws {
        let pki = try Self.pki.get()
        var configuration = VantagePointSimulation.Configuration(seed: 7, n: 3, k: 2, compromised: [0], intercepted: [], rounds: 1)
        configuration.compromised = [0, 1]  // k compromised keys: outside the model
        let simulation = try VantagePointSimulation(configuration, pki: pki)
        defer { simulation.cleanUp() }
        await simulation.run()
        try await simulation.finishImpostorWithCompromisedKeys()
        #expect(simulation.violations.contains { $0.contains("pins the impostor") })
    }
}
