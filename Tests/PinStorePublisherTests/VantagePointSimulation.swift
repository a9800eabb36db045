import Foundation
import Logging
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
import PinStoreTestSupport
@testable import PinStorePublisher

/// A deterministic simulation of the vantage-point protocol (FoundationDB's shape): the real
/// `Publisher` code for every vantage point, one injected clock, one in-memory medium, and an
/// adversary that holds up to k-1 list keys and writes anything into the medium. After every
/// step the properties of the model are checked; a violation names the seed that replays it.
///
/// What a seed fixes: n, k, which vantage points are compromised or intercepted, the order in
/// which vantage points probe and cycle, and every adversary move. What it does not fix: the
/// bytes of ECDSA signatures (OpenSSL draws a fresh nonce), so object names differ between runs
/// while the schedule and the moves do not.
final class VantagePointSimulation {
    struct Configuration: CustomStringConvertible {
        var seed: UInt64
        var n: Int
        var k: Int
        /// Vantage points whose host and key the adversary holds (at most k-1).
        var compromised: Set<Int>
        /// Honest vantage points on an intercepted path: they see the impostor's certificate.
        var intercepted: Set<Int>
        var rounds: Int

        var description: String {
            "seed \(seed): n \(n), k \(k), compromised \(compromised.sorted()), intercepted \(intercepted.sorted()), \(rounds) rounds"
        }

        /// The configuration a seed gives: n from 1 to 5, k from 1 to min(n, 3), up to k-1
        /// compromised, sometimes an honest vantage point on an intercepted path.
        static func from(seed: UInt64, rounds: Int = 8) -> Configuration {
            var random = SeededRandom(seed: seed)
            let n = Int.random(in: 1...5, using: &random)
            let k = Int.random(in: 1...min(n, 3), using: &random)
            let compromisedCount = Int.random(in: 0...(k - 1), using: &random)
            let order = Array(0..<n).shuffled(using: &random)
            let compromised = Set(order.prefix(compromisedCount))
            let honest = order.dropFirst(compromisedCount)
            let intercepted: Set<Int> = honest.count > 1 && Bool.random(using: &random) ? [honest.last!] : []
            return Configuration(seed: seed, n: n, k: k, compromised: compromised, intercepted: intercepted, rounds: rounds)
        }

        /// Whether the model promises a list: k honest vantage points that see the real partner.
        var livenessApplies: Bool { n - compromised.count - intercepted.count >= k }
    }

    struct Vantage {
        let index: Int
        let fixture: PublisherFixture
        let publisher: Publisher
        let prober: PresentingProber
        var isHonest: Bool
    }

    enum Move: CaseIterable {
        case proposeImpostor, forgedApproval, replayedApproval, otherCRLSection, otherCTSection, otherRevocations,
             junk, oversized, largeJunk, farFuture, backDated, futureDated, signEverything, withhold, leaveOutNewPin
    }

    let configuration: Configuration
    /// The move this seed's adversary makes at the start of every round.
    let favourite: Move
    let pki: TestPKI
    // The test PKI's certificates are valid from today: the clock starts now.
    let clock = TestClock()
    let medium = InMemoryMedium()
    let approver: P256PrivateKey
    var random: SeededRandom
    var vantages: [Vantage] = []
    var listKeys: [P256PublicKey] = []
    /// Every violation found, each with the step it was found at.
    var violations: [String] = []
    var step = 0
    /// Valid finished lists by name: version (checked once).
    private var finished: [String: Int64] = [:]
    private var rejectedLists = Set<String>()
    /// The round at the end of which every honest vantage point had the real pin (nil: never).
    var realPinEverywhereAtRound: Int?
    /// The partner's next leaf (same CA), presented from ``rotationRound`` on, unannounced.
    let next: TestIdentity
    var rotationRound: Int { configuration.rounds / 2 + 1 }
    /// The round at the end of which every honest vantage point had the next leaf's pin.
    var nextPinEverywhereAtRound: Int?
    var nextPin: String { next.certificate.fingerprintBase64 }

    var impostorPin: String { pki.impostor.certificate.fingerprintBase64 }
    var genuinePin: String { pki.leaf.certificate.fingerprintBase64 }

    init(_ configuration: Configuration, pki: TestPKI, favourite: Move? = nil) throws {
        self.configuration = configuration
        self.pki = pki
        self.random = SeededRandom(seed: configuration.seed ^ 0x5EED)
        let chosen = Move.allCases.randomElement(using: &self.random)!
        // PINSTORE_SIMULATION_FAVOURITE=<move> makes every seed's adversary insist on one move.
        self.favourite = ProcessInfo.processInfo.environment["PINSTORE_SIMULATION_FAVOURITE"]
            .flatMap { name in Move.allCases.first { "\($0)" == name } } ?? favourite ?? chosen
        approver = try P256PrivateKey()
        next = try pki.issueLeaf(for: ["localhost"])
        let fixtures = try (0..<configuration.n).map { _ in try PublisherFixture(pki: pki) }
        listKeys = try fixtures.map { try $0.key.publicKey }
        let keys = listKeys.map { $0.x963Representation.base64EncodedString() }
        let approverKey = try approver.publicKey.x963Representation.base64EncodedString()
        for (index, fixture) in fixtures.enumerated() {
            let others = keys.enumerated().filter { $0.offset != index }.map { "\"\($0.element)\"" }.joined(separator: ", ")
            let file = try fixture.file(#", "threshold": \#(configuration.k), "otherPublisherKeys": [\#(others)], "approverKeys": ["\#(approverKey)"], "expires": "2h", "resignInterval": "30m", "vantagePoint": {"name": "v\#(index)"}"#)
            let prober = PresentingProber(trustRoots: .anchors([pki.root, pki.impostorRoot]), clock: clock)
            let sees = configuration.compromised.contains(index) || configuration.intercepted.contains(index) ? pki.impostor : pki.leaf
            prober.present(["127.0.0.1:443": sees.chainDER])
            // PINSTORE_SIMULATION_LOG=1 prints every vantage point's debug log (with one seed).
            var logger = Logger(label: "v\(index)", factory: { label -> any LogHandler in
                if ProcessInfo.processInfo.environment["PINSTORE_SIMULATION_LOG"] == nil { return SwiftLogNoOpLogHandler() }
                return StreamLogHandler.standardError(label: label)
            })
            logger.logLevel = Logger.Level.debug
            let publisher = try Publisher(setup: try PublisherSetup(file: file), prober: prober, clock: clock, medium: medium, logger: logger)
            vantages.append(Vantage(index: index, fixture: fixture, publisher: publisher, prober: prober,
                                    isHonest: !configuration.compromised.contains(index)))
        }
    }

    func cleanUp() { vantages.forEach { $0.fixture.cleanUp() } }

    /// Runs every round, checking the properties after every step.
    func run() async {
        for round in 1...configuration.rounds {
            clock.advance(600)
            if round == rotationRound {
                // The partner swaps its leaf, unannounced; every path that is not intercepted sees it.
                for vantage in vantages where !configuration.compromised.contains(vantage.index) && !configuration.intercepted.contains(vantage.index) {
                    vantage.prober.present(["127.0.0.1:443": next.chainDER])
                }
            }
            // The adversary proposes first in every round: its favourite move (the same every
            // round, as a persistent attacker would), then others at random.
            await make(favourite, attacker: configuration.compromised.randomElement(using: &random))
            await adversaryMoves(count: 2)
            for index in Array(0..<vantages.count).shuffled(using: &random) where vantages[index].isHonest {
                await vantages[index].publisher.probe()
                await checked()
            }
            for index in Array(0..<vantages.count).shuffled(using: &random) {
                if vantages[index].isHonest {
                    await vantages[index].publisher.cycle()
                } else {
                    await adversaryMoves(count: 1, as: index)
                }
                await checked()
                if Bool.random(using: &random) { await adversaryMoves(count: 1) }
            }
            if realPinEverywhereAtRound == nil, await honestVantagesAllPublish(genuinePin) {
                realPinEverywhereAtRound = round
            }
            if round >= rotationRound, nextPinEverywhereAtRound == nil, await honestVantagesAllPublish(nextPin) {
                nextPinEverywhereAtRound = round
            }
        }
    }

    /// Whether every honest vantage point that sees the real partner has a list in force with `pin`.
    func honestVantagesAllPublish(_ pin: String) async -> Bool {
        for vantage in vantages where vantage.isHonest && !configuration.intercepted.contains(vantage.index) {
            let state = await vantage.publisher.state
            guard state.lastPublished?.entries.contains(where: { $0.contains(pin) }) ?? false else { return false }
        }
        return true
    }

    // MARK: The properties

    private func checked() async {
        step += 1
        await checkSafety()
    }

    /// Safety: every finished list in the medium with k valid signatures carries no pin the
    /// honest vantage points did not accept (the impostor's), the honest sections (no crl, no
    /// revocations, no CT section), and a version one above another finished list (or 1);
    /// every honest vantage point serves only such lists, its versions only rising.
    private func checkSafety() async {
        for (name, data) in medium.allObjects where name.hasPrefix("list-") && finished[name] == nil && !rejectedLists.contains(name) {
            guard let checked = try? ListAcceptance.checkPublishable(data, keys: listKeys, threshold: configuration.k, previousVersion: nil,
                                                                   previousTimestamp: nil, at: clock.now()) else {
                rejectedLists.insert(name)
                continue
            }
            finished[name] = checked.version
            if checked.entries.contains(where: { $0.fingerprint.base64EncodedString() == impostorPin }) {
                violations.append("step \(step): finished list \(name) pins the impostor")
            }
            if Publisher.crl(in: data) != .some(nil) || (Publisher.revocations(in: data)?.isEmpty ?? false) == false
                || (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["certificateTransparency"] != nil {
                violations.append("step \(step): finished list \(name) carries a section no honest vantage point writes")
            }
        }
        let versions = Set(finished.values)
        for version in versions where version != 1 && !versions.contains(version - 1) {
            violations.append("step \(step): a finished list has version \(version), but none has \(version - 1)")
        }
        for vantage in vantages where vantage.isHonest {
            let state = await vantage.publisher.state
            if state.lastPublished?.entries.contains(where: { $0.contains(impostorPin) }) ?? false {
                violations.append("step \(step): honest v\(vantage.index) publishes the impostor")
            }
        }
    }

    // MARK: The adversary

    /// The version the honest vantage points work on: one above the highest finished list.
    private var targetVersion: Int64 { (finished.values.max() ?? 0) + 1 }

    private func adversaryMoves(count: Int, as attacker: Int? = nil) async {
        for _ in 0..<count {
            let move = Move.allCases.randomElement(using: &random)!
            let key = attacker ?? configuration.compromised.randomElement(using: &random)
            await make(move, attacker: key)
        }
    }

    private func make(_ move: Move, attacker: Int?) async {
        let version = targetVersion
        let now = Int64(clock.now().timeIntervalSince1970)
        do {
            switch move {
            case .junk:
                let kind = SharedProposals.Kind.allCases.randomElement(using: &random)!
                var bytes = Data(count: Int.random(in: 0...64, using: &random))
                for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &random) }
                _ = medium.createExclusively(SharedProposals.name(kind, version: version, bytes: bytes), contents: bytes)
            case .largeJunk:
                // As large as a list may be, hashing to its name: read, refused, never in the way.
                var bytes = Data(repeating: 0x20, count: SharedProposals.Kind.list.maximumSize - 8)
                bytes.append(contentsOf: withUnsafeBytes(of: random.next()) { Array($0) })
                let kind: SharedProposals.Kind = Bool.random(using: &random) ? .list : .proposal
                _ = medium.createExclusively(SharedProposals.name(kind, version: version, bytes: bytes), contents: bytes)
            case .oversized:
                let bytes = Data(repeating: 0x7B, count: SharedProposals.Kind.signature.maximumSize + 1)
                _ = medium.createExclusively(SharedProposals.name(.signature, version: version, bytes: bytes), contents: bytes)
                let list = Data(repeating: 0x7B, count: SharedProposals.Kind.list.maximumSize + 1)
                _ = medium.createExclusively(SharedProposals.name(.list, version: version, bytes: list), contents: list)
            case .farFuture:
                for far in [Int64.max, Int64.max - 1] {
                    _ = medium.createExclusively(SharedProposals.name(.list, version: far, bytes: Data()), contents: Data())
                    _ = medium.createExclusively("list-\(far).json", contents: Data())
                }
            case .withhold:
                break
            default:
                guard let attacker else { return }
                try await keyedMove(move, attacker: attacker, version: version, now: now)
            }
        } catch {
            violations.append("step \(step): the simulation's own move \(move) failed: \(error)")
        }
    }

    private func keyedMove(_ move: Move, attacker: Int, version: Int64, now: Int64) async throws {
        let key = vantages[attacker].fixture.key
        let signer = try KeyFileSigner(privateKey: key)
        let shared = SharedProposals(medium: medium)
        let expires = now + 7_200
        func entry(_ pin: String, _ identity: TestIdentity) -> FingerprintEntry {
            FingerprintEntry(name: "localhost", fingerprint: Data(base64Encoded: pin)!, expires: Int64(identity.certificate.notAfter.timeIntervalSince1970))
        }
        var entries = [entry(genuinePin, pki.leaf)]
        var approvals: [PublisherState.Approval] = []
        var timestamp = now
        var crl: CRLHostList.Wire?
        var ct: Data?
        var revocations: [ListRevocations.Wire] = []
        let impostorChange = PublicationRules.changeID(partnerID: "api", leafSHA256: impostorPin)
        switch move {
        case .proposeImpostor:
            entries = [entry(impostorPin, pki.impostor)]
        case .forgedApproval:
            entries.append(entry(impostorPin, pki.impostor))
            approvals.append(try Self.approval(change: impostorChange, leaf: impostorPin, pin: impostorPin, by: key))
        case .replayedApproval:
            // A genuine approval (the approver's key) of another change, and one under the same
            // change ID naming the attacker's own key, for the impostor.
            let other = PublicationRules.changeID(partnerID: "api", leafSHA256: genuinePin)
            approvals.append(try Self.approval(change: other, leaf: genuinePin, pin: genuinePin, by: approver))
            approvals.append(try Self.approval(change: other, leaf: impostorPin, pin: impostorPin, by: key))
            entries.append(entry(impostorPin, pki.impostor))
        case .otherCRLSection:
            crl = CRLHostList.Wire(hosts: [CTLogList.Wire.Host(name: "localhost", mode: "reportOnly")])
        case .otherCTSection:
            ct = try TestCTLogList(logs: [TestCTLogList.Log(try TestCTLog(), operatorName: "attacker")]).json()
        case .otherRevocations:
            revocations = [ListRevocations.Wire(kind: "certificate", sha256: genuinePin)]
        case .leaveOutNewPin:
            // The list as it was before the rotation, proposed afresh: honest in every section,
            // but holding back the partner's new pin.
            entries = [entry(genuinePin, pki.leaf)]
        case .backDated:
            timestamp = now - 86_400 * 30
        case .futureDated:
            timestamp = now + 86_400 * 30
        case .signEverything:
            // Signs every proposal of the version, whatever it says.
            for (_, proposal) in shared.proposals(version).objects {
                guard let body = proposal.bodyBytes else { continue }
                let signature = try await signer.sign(try ListAssembly.labelledMessage(of: body))
                try shared.add(ProposalSignature(version: version, bodySHA256: StateFile.hex(SHA256Digest.hash(body)), keyID: signer.keyID,
                                                 signature: signature.base64EncodedString(), signer: "attacker"))
            }
            return
        default:
            return
        }
        let assembly = ListAssembly(entrySigner: signer)
        let body = try await assembly.unsignedBody(entries: entries.sorted { $0.fingerprint.base64EncodedString() < $1.fingerprint.base64EncodedString() },
                                                   version: version, timestamp: timestamp, expires: expires,
                                                   certificateTransparency: ct, revocations: revocations, crl: crl)
        try shared.create(Proposal(version: version, proposer: "v\(attacker)", body: body, approvals: approvals))
        // Every compromised key signs it.
        for index in configuration.compromised {
            let other = try KeyFileSigner(privateKey: vantages[index].fixture.key)
            let signature = try await other.sign(try ListAssembly.labelledMessage(of: body))
            try shared.add(ProposalSignature(version: version, bodySHA256: StateFile.hex(SHA256Digest.hash(body)), keyID: other.keyID,
                                             signature: signature.base64EncodedString(), signer: "attacker"))
        }
    }

    /// Outside the model, for the test of the checks: k compromised keys sign and finish the
    /// impostor's proposal themselves.
    func finishImpostorWithCompromisedKeys() async throws {
        guard let attacker = configuration.compromised.min() else { return }
        let version = targetVersion
        try await keyedMove(.proposeImpostor, attacker: attacker, version: version, now: Int64(clock.now().timeIntervalSince1970))
        let shared = SharedProposals(medium: medium)
        let signatures = shared.signatures(version).objects.map(\.value)
        for (_, proposal) in shared.proposals(version).objects {
            guard let body = proposal.bodyBytes else { continue }
            let hash = StateFile.hex(SHA256Digest.hash(body))
            let labelled = signatures.filter { $0.bodySHA256 == hash }.compactMap { signature in
                Data(base64Encoded: signature.signature).map { (keyID: signature.keyID, signature: $0) }
            }
            guard labelled.count >= configuration.k else { continue }
            let list = try await ListAssembly.finish(body, labelled: labelled, first: try KeyFileSigner(privateKey: vantages[attacker].fixture.key))
            try shared.finish(version, list: list)
        }
        await checked()
    }

    static func approval(change: String, leaf: String, pin: String, by key: P256PrivateKey) throws -> PublisherState.Approval {
        let message = PublicationRules.approvalMessage(changeID: change, partnerID: "api", leafSHA256: leaf, kind: .leafCertificate, pin: pin)
        let signer = try KeyFileSigner(privateKey: key)
        let signature = try key.signature(for: message)
        return PublisherState.Approval(changeID: change, partnerID: "api", leafSHA256: leaf, kind: .leafCertificate, pin: pin,
                                       keyID: signer.keyID, signature: signature.base64EncodedString(), approvedAt: Date())
    }
}
