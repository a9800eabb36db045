import Foundation
import Testing
@testable import PinStore
import PinStoreSigning

/// The profiles' rules (``CTCompliance``) over SCTs already checked against their logs: which
/// SCTs count, how many a lifetime needs, operator diversity, Chrome's and Apple's differences.
@Suite struct CTComplianceTests {
    /// A log list of the given logs, each (operator, state, type).
    struct Logs {
        let list: CTLogList
        let ids: [Digest32]

        init(_ logs: [(operatorName: String, state: String, type: String?, stateTimestamp: Int64?)],
             previousOperators: [Int: [CTLogList.Wire.Log.PreviousOperator]] = [:],
             intervals: [Int: CTLogList.Wire.Log.Interval] = [:]) throws {
            var wires: [CTLogList.Wire.Log] = []
            var ids: [Digest32] = []
            for (index, log) in logs.enumerated() {
                let key = try P256PrivateKey().publicKey.derRepresentation
                ids.append(try #require(Digest32(SHA256Digest.hash(key))))
                wires.append(CTLogList.Wire.Log(key: key.base64EncodedString(), id: nil, operator: log.operatorName, type: log.type,
                                                state: log.state, stateTimestamp: log.stateTimestamp,
                                                temporalInterval: intervals[index], previousOperators: previousOperators[index]))
            }
            list = try CTLogList(CTLogList.Wire(logListTimestamp: 1_790_000_000, profile: nil, logs: wires, hosts: nil))
            self.ids = ids
        }
    }

    static let issued: UInt64 = 1_780_000_000_000
    static let notBefore: Int64 = 1_780_000_000

    static func check(_ id: Digest32, at timestamp: UInt64 = issued, _ status: SCTStatus = .verified) -> SCTCheck {
        SCTCheck(sct: SignedCertificateTimestamp(logID: id.data, timestamp: timestamp),
                 status: status)
    }

    /// A leaf whose notAfter is `lifetimeDays` days plus `plusSeconds` seconds after its notBefore.
    static func evidence(_ checks: [SCTCheck], lifetimeDays: Int64 = 90, plusSeconds: Int64 = 0) -> EmbeddedSCTEvidence {
        EmbeddedSCTEvidence(checks: checks, leafNotBefore: notBefore, leafNotAfter: notBefore + lifetimeDays * 86_400 + plusSeconds)
    }

    static func judge(_ profile: CertificateTransparencyProfile, _ checks: [SCTCheck], logs: Logs,
                      lifetimeDays: Int64 = 90, plusSeconds: Int64 = 0) -> CertificateTransparencyViolation? {
        CTCompliance.violation(of: profile, evidence: evidence(checks, lifetimeDays: lifetimeDays, plusSeconds: plusSeconds),
                               logs: logs.list, now: 1_790_000_000)
    }

    static let twoOperators: [(operatorName: String, state: String, type: String?, stateTimestamp: Int64?)] =
        [("A", "usable", nil, nil), ("B", "qualified", nil, nil), ("A", "readonly", nil, nil)]

    // MARK: - Chrome

    @Test func chromeAcceptsTwoSCTsFromTwoOperatorsForAShortLivedLeaf() throws {
        let logs = try Logs(Self.twoOperators)
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs) == nil)
    }

    @Test func chromeRefusesOneSCT() throws {
        let logs = try Logs(Self.twoOperators)
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0])], logs: logs)?.problem == .tooFewSCTs(required: 2, counted: 1))
    }

    @Test func chromeRefusesTwoSCTsOfOneOperator() throws {
        let logs = try Logs(Self.twoOperators)
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[2])], logs: logs)?.problem
            == .tooFewOperators(required: 2, counted: 1))
    }

    @Test func twoSCTsFromOneLogCountOnce() throws {
        let logs = try Logs(Self.twoOperators)
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[0], at: Self.issued + 1)], logs: logs)?.problem
            == .tooFewSCTs(required: 2, counted: 1))
    }

    @Test func aLeafOfMoreThan180DaysNeedsThreeSCTs() throws {
        let logs = try Logs(Self.twoOperators)
        let two = [Self.check(logs.ids[0]), Self.check(logs.ids[1])]
        #expect(Self.judge(.chrome, two, logs: logs, lifetimeDays: 180) == nil)
        #expect(Self.judge(.chrome, two, logs: logs, lifetimeDays: 398)?.problem == .tooFewSCTs(required: 3, counted: 2))
        #expect(Self.judge(.chrome, two + [Self.check(logs.ids[2])], logs: logs, lifetimeDays: 398) == nil)
    }

    @Test func chromeMeasuresTheLifetimeAsNotAfterMinusNotBefore() throws {
        let logs = try Logs(Self.twoOperators)
        let two = [Self.check(logs.ids[0]), Self.check(logs.ids[1])]
        #expect(Self.judge(.chrome, two, logs: logs, lifetimeDays: 180) == nil)
        #expect(Self.judge(.chrome, two, logs: logs, lifetimeDays: 180, plusSeconds: 1)?.problem == .tooFewSCTs(required: 3, counted: 2))
    }

    @Test func anSCTWithABadSignatureDoesNotCount() throws {
        let logs = try Logs(Self.twoOperators)
        let violation = Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1], .invalidSignature)], logs: logs)
        #expect(violation?.problem == .tooFewSCTs(required: 2, counted: 1))
        #expect(violation?.detail.contains("invalidSignature") == true)
    }

    @Test func anSCTFromAnUnknownLogIsCountedAsSuch() throws {
        let logs = try Logs(Self.twoOperators)
        let stranger = try #require(Digest32(SHA256Digest.hash(Data("another log".utf8))))
        let violation = Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(stranger, .unknownLog)], logs: logs)
        #expect(violation?.problem == .tooFewSCTs(required: 2, counted: 1))
        #expect(violation?.sctsFromUnknownLogs == 1)
    }

    @Test func aRetiredLogCountsOnlyForSCTsIssuedBeforeItsRetirement() throws {
        let retiredAt: Int64 = 1_785_000_000
        let logs = try Logs([("A", "usable", nil, nil), ("B", "retired", nil, retiredAt)])
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1], at: Self.issued)], logs: logs) == nil)
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1], at: UInt64(retiredAt + 1) * 1000)], logs: logs)?
            .problem == .tooFewSCTs(required: 2, counted: 1))
    }

    @Test func aRetiredLogWithoutADateCountsNothing() throws {
        let logs = try Logs([("A", "usable", nil, nil), ("B", "retired", nil, nil)])
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs) != nil)
    }

    @Test func pendingAndRejectedLogsDoNotCount() throws {
        let logs = try Logs([("A", "usable", nil, nil), ("B", "pending", nil, nil), ("C", "rejected", nil, nil)])
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1]), Self.check(logs.ids[2])], logs: logs)?.problem
            == .tooFewSCTs(required: 2, counted: 1))
    }

    @Test func chromeNeedsOneSCTFromALogUsableNow() throws {
        let logs = try Logs([("A", "retired", nil, 1_785_000_000), ("B", "retired", nil, 1_785_000_000)])
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs)?.problem == .noSCTFromCurrentLog)
    }

    @Test func operatorsAreCountedAsTheyWereWhenTheSCTWasIssued() throws {
        // Log 1 belongs to A today, but was B's when the SCT was issued: two operators.
        let logs = try Logs([("A", "usable", nil, nil), ("A", "usable", nil, nil)],
                            previousOperators: [1: [.init(name: "B", endTime: 1_785_000_000)]])
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs) == nil)
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1], at: 1_786_000_000_000)], logs: logs)?.problem
            == .tooFewOperators(required: 2, counted: 1))
    }

    @Test func chromeAcceptsStaticCTAPILogs() throws {
        let logs = try Logs([("A", "usable", "static-ct-api", nil), ("B", "usable", "static-ct-api", nil)])
        #expect(Self.judge(.chrome, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs) == nil)
    }

    // MARK: - Apple

    @Test func appleCountsOneSCTPerOperatorForAShortLivedLeaf() throws {
        let logs = try Logs(Self.twoOperators)
        #expect(Self.judge(.apple, [Self.check(logs.ids[0]), Self.check(logs.ids[2])], logs: logs)?.problem
            == .tooFewSCTs(required: 2, counted: 1))
        #expect(Self.judge(.apple, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs) == nil)
    }

    @Test func appleCountsTwoSCTsPerOperatorForALongerLeaf() throws {
        let logs = try Logs([("A", "usable", nil, nil), ("A", "usable", nil, nil), ("A", "usable", nil, nil), ("B", "usable", nil, nil)])
        let threeOfA = [Self.check(logs.ids[0]), Self.check(logs.ids[1]), Self.check(logs.ids[2])]
        #expect(Self.judge(.apple, threeOfA, logs: logs, lifetimeDays: 398)?.problem == .tooFewSCTs(required: 3, counted: 2))
        #expect(Self.judge(.apple, [Self.check(logs.ids[0]), Self.check(logs.ids[1]), Self.check(logs.ids[3])], logs: logs,
                           lifetimeDays: 398) == nil)
    }

    @Test func appleCountsTheLifetimeFromNotBeforeThroughNotAfterInclusive() throws {
        // notAfter exactly 180 days after notBefore: with its last second, 180 days and one second.
        let logs = try Logs(Self.twoOperators)
        let two = [Self.check(logs.ids[0]), Self.check(logs.ids[1])]
        #expect(Self.judge(.apple, two, logs: logs, lifetimeDays: 180)?.problem == .tooFewSCTs(required: 3, counted: 2))
        #expect(Self.judge(.apple, two + [Self.check(logs.ids[2])], logs: logs, lifetimeDays: 180) == nil)
    }

    @Test func appleAcceptsTwoSCTsForALeafOfExactly180DaysInclusive() throws {
        let logs = try Logs(Self.twoOperators)
        let two = [Self.check(logs.ids[0]), Self.check(logs.ids[1])]
        #expect(Self.judge(.apple, two, logs: logs, lifetimeDays: 180, plusSeconds: -1) == nil)
    }

    @Test func appleNeedsOneSCTFromALogApprovedNow() throws {
        // Both logs retired after their SCTs: each SCT counts, but neither log is approved now.
        let logs = try Logs([("A", "retired", nil, 1_785_000_000), ("B", "retired", nil, 1_785_000_000)])
        #expect(Self.judge(.apple, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs)?.problem == .noSCTFromCurrentLog)
    }

    @Test func appleAcceptsARetiredLogBesideALogApprovedNow() throws {
        let logs = try Logs([("A", "usable", nil, nil), ("B", "retired", nil, 1_785_000_000)])
        #expect(Self.judge(.apple, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs) == nil)
    }

    @Test func appleNeedsOneSCTFromAnRFC6962Log() throws {
        let logs = try Logs([("A", "usable", "static-ct-api", nil), ("B", "usable", "static-ct-api", nil)])
        #expect(Self.judge(.apple, [Self.check(logs.ids[0]), Self.check(logs.ids[1])], logs: logs)?.problem == .noSCTFromRFC6962Log)
    }

    @Test func appleEnforcesTheLogsTemporalInterval() throws {
        let expiry = Self.notBefore + 90 * 86_400
        let logs = try Logs([("A", "usable", nil, nil), ("B", "usable", nil, nil)],
                            intervals: [1: .init(start: expiry + 1, end: expiry + 365 * 86_400)])
        let checks = [Self.check(logs.ids[0]), Self.check(logs.ids[1])]
        #expect(Self.judge(.apple, checks, logs: logs)?.problem == .tooFewSCTs(required: 2, counted: 1))
        // Chrome does not judge temporal intervals: the logs themselves refuse what is outside.
        #expect(Self.judge(.chrome, checks, logs: logs) == nil)
    }
}
