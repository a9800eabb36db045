import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// A clock tests set by hand. `sleep(until:)` suspends until the test moves the clock to or
/// past the deadline, so scheduling is tested with exact times and no real waiting.
final class ManualClock: PinStoreClock, @unchecked Sendable {
    private struct Sleeper {
        let deadline: Date
        let continuation: CheckedContinuation<Void, any Error>
    }
    private let lock = NSLock()
    private var current: Date
    private var sleepers: [UInt64: Sleeper] = [:]
    private var nextSleeper: UInt64 = 0

    init(_ date: Date) { current = date }
    /// 2030-01-01T00:00:00Z: inside every live fixture entry (they expire 2099-12-31).
    static func inValidPeriod() -> ManualClock { ManualClock(Date(timeIntervalSince1970: 1_893_456_000)) }

    func now() -> Date { lock.lock(); defer { lock.unlock() }; return current }
    func set(_ date: Date) { lock.lock(); current = date; lock.unlock(); wakeDue() }
    func advance(_ seconds: TimeInterval) { lock.lock(); current += seconds; lock.unlock(); wakeDue() }

    func sleep(until deadline: Date) async throws {
        let id: UInt64 = { lock.lock(); defer { lock.unlock() }; nextSleeper += 1; return nextSleeper }()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                lock.lock()
                if current >= deadline || Task.isCancelled {
                    lock.unlock()
                    if Task.isCancelled { continuation.resume(throwing: CancellationError()) } else { continuation.resume() }
                    return
                }
                sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                lock.unlock()
            }
        } onCancel: {
            lock.lock()
            let sleeper = sleepers.removeValue(forKey: id)
            lock.unlock()
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The earliest deadline a task sleeps until, once one does (polls; nil when none does
    /// within ``HangGuard/seconds``: 5 s measured a loaded machine).
    func nextWake() async -> Date? {
        var earliest: Date?
        _ = try? await pollUntil(every: .milliseconds(1)) {
            earliest = { lock.lock(); defer { lock.unlock() }; return sleepers.values.map(\.deadline).min() }()
            return earliest != nil
        }
        return earliest
    }

    private func wakeDue() {
        lock.lock()
        let due = sleepers.filter { $0.value.deadline <= current }
        for key in due.keys { sleepers.removeValue(forKey: key) }
        lock.unlock()
        for sleeper in due.values { sleeper.continuation.resume() }
    }
}

/// A fetcher that answers from a closure, counts requests and can be slowed down. It stands
/// in for the network in unit tests; the end-to-end tests use the real URLSession fetcher.
final class ScriptedFetcher: FingerprintListFetcher, @unchecked Sendable {
    typealias Script = @Sendable (FingerprintListRequest) throws(PinStoreError) -> FingerprintListResponse
    private let lock = NSLock()
    private var script: Script
    private var requests: [FingerprintListRequest] = []
    let delay: Duration

    init(delay: Duration = .zero, _ script: @escaping Script) {
        self.script = script
        self.delay = delay
    }

    var requestCount: Int { lock.lock(); defer { lock.unlock() }; return requests.count }
    var lastRequest: FingerprintListRequest? { lock.lock(); defer { lock.unlock() }; return requests.last }

    func answer(_ script: @escaping Script) { lock.lock(); self.script = script; lock.unlock() }

    func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        let script: Script = { lock.lock(); defer { lock.unlock() }; requests.append(request); return self.script }()
        if delay > .zero { try? await Task.sleep(for: delay) }
        return try script(request)
    }

    /// Serves a static-mode list body.
    static func serving(_ body: Data, delay: Duration = .zero) -> ScriptedFetcher {
        ScriptedFetcher(delay: delay) { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: body) }
    }

    /// Serves a challenge-mode body, signing each request's challenge with `key`.
    static func challengeResponder(_ body: Data, key: P256PrivateKey) -> Script {
        { request throws(PinStoreError) in
            let challenge = request.headers[PinStore.challengeHeader] ?? ""
            let signature = try key.signature(for: Data(challenge.utf8) + Data("&".utf8) + body)
            return FingerprintListResponse(statusCode: 200, headers: [PinStore.signatureHeader: signature.base64EncodedString()], body: body)
        }
    }
}

/// A fresh folder under the temporary directory, removed by `cleanUp()`.
struct TemporaryDirectory {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func cleanUp() { try? FileManager.default.removeItem(at: url) }
}

enum StoreFixtures {
    static func publicKey() throws -> String { try TestResources.fixtureText("keys/list-signing.pub.b64") }
    static func signingKey() throws -> P256PrivateKey { try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")) }
    static func otherSigningKey() throws -> P256PrivateKey { try P256PrivateKey(pem: TestResources.fixtureText("keys/other-signing.key.pem")) }
    static func list(_ name: String) throws -> Data { try TestResources.fixture("lists/\(name)") }
    static func der(_ name: String) throws -> Data { try TestResources.certificate("pki/\(name).pem").derRepresentation }

    static func configuration(directory: URL, useChallenge: Bool = false, fallback: Data? = nil,
                              expectedCommonNames: [String]? = nil, maximumListSize: Int = 1 << 20,
                              serviceURL: URL = URL(string: "https://pins.pinstore.test/list.json")!,
                              identifier: String = "tests") throws -> PinStore.Configuration {
        // `requestTimeout` is a hang guard here: the store's backstop around a fetcher of its
        // own (twice the timeout) counts time the fetcher's task waits for a thread, and with
        // 5 s a scripted answer given at once came back `deadlineExceeded` on a loaded machine.
        PinStore.Configuration(serviceURL: serviceURL, publicKey: try publicKey(), useChallenge: useChallenge,
                               expectedCommonNames: expectedCommonNames, identifier: identifier,
                               fallbackData: fallback, storageDirectory: directory,
                               requestTimeout: HangGuard.seconds, maximumListSize: maximumListSize)
    }

    static func store(_ fetcher: any FingerprintListFetcher, directory: URL, clock: ManualClock = .inValidPeriod(),
                      useChallenge: Bool = false, fallback: Data? = nil, expectedCommonNames: [String]? = nil,
                      maximumListSize: Int = 1 << 20) throws -> PinStore {
        try PinStore(configuration: configuration(directory: directory, useChallenge: useChallenge, fallback: fallback,
                                                  expectedCommonNames: expectedCommonNames, maximumListSize: maximumListSize),
                     fetcher: fetcher, clock: clock)
    }
}

/// Peer addresses for the leaf view (``PinStore/leafDecision(leaf:peerAddress:)``).
enum LeafPeer {
    /// An address none of the fixture leaves names (they name 127.0.0.1): their IP-address
    /// name then cannot stand for the requested host, and their DNS names decide.
    static let notInLeaf = "::1"
}
