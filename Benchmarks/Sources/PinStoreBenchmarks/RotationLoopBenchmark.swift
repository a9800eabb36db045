import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO
@_spi(Benchmarks) import PinStorePublisher
import PinStoreSigning
import PinStoreTesting

// Issue 44, item 4: the rotation loop measured end to end, in real time, with real parts only.
// A partner HTTPS server on 127.0.0.1 swaps its leaf unannounced (a new key from the same allowed
// CA). Three vantage points (three `Publisher`s with their own keys and the real TLS prober,
// sharing a real proposals folder, threshold 2, every interval at its default) each run `run()`,
// which listens on the file's `reportEndpoint`. N stores (`PinStore`, `run()`, `reportURI` at one
// vantage point's endpoint, the real URLSession list fetcher) download the list over HTTP from a
// loopback list server with ETag and 304 (PinStoreTesting's `TestListServer`, answering as
// `pinstore serve` does, republishing the honest vantage point's output list when it changes),
// and each makes one pinned request a second to the partner through PinStoreNIO's
// `PinningTLSVerifier` (a full handshake and a GET per request: the partner closes every
// connection, so no kept-alive connection hides the cutover).
//
// Then the same with vantage point 0 intercepted: its probes reach another server on 127.0.0.1
// presenting an impostor chain, and its own publication file trusts and allows the impostor's CA
// (so its own rules would publish it). No list any vantage point writes may ever pin it.

/// A value behind a lock, shared between tasks.
private final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// One partner request's outcome as the store's pinned client saw it.
private enum RequestOutcome: Sendable {
    case allowed
    case refused
    case failed(String)
}

/// One request: when it started and ended, and its outcome.
private struct RequestRecord: Sendable {
    let started: Date
    let ended: Date
    let outcome: RequestOutcome
}

// MARK: - The partner: an HTTPS server whose certificate can be swapped

/// Answers every request with a small 200, `Connection: close`, then closes: every request is a
/// new connection and a new pin decision.
private final class PartnerResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let body = "partner\n"

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Content-Length", value: String(Self.body.utf8.count))
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: Self.body)))), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

private func serverContext(_ identity: TestIdentity) throws -> NIOSSLContext {
    let chain = try NIOSSLCertificate.fromPEMBytes(Array(identity.certificateChainPEM.utf8))
    let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
    return try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)))
}

/// An HTTPS server on 127.0.0.1 whose certificate changes at ``present(_:)``, on the same port.
private final class PartnerServer: Sendable {
    let port: Int
    private let channel: any Channel
    /// The TLS context new connections get: swapping it is the partner's unannounced rotation.
    private let current: Guarded<NIOSSLContext>

    private init(port: Int, channel: any Channel, current: Guarded<NIOSSLContext>) {
        self.port = port
        self.channel = channel
        self.current = current
    }

    static func start(presenting identity: TestIdentity, group: any EventLoopGroup) async throws -> PartnerServer {
        let current = Guarded(try serverContext(identity))
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    let pipeline = child.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLServerHandler(context: current.withLock { $0 }))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(PartnerResponder())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw BenchmarkFailure("the partner server has no port") }
        return PartnerServer(port: port, channel: channel, current: current)
    }

    /// New connections present `identity` from now on.
    func present(_ identity: TestIdentity) throws {
        let next = try serverContext(identity)
        current.withLock { $0 = next }
    }

    func shutdown() async {
        try? await channel.close()
    }
}

// MARK: - The stores' pinned client

/// Sends `GET /` with `Connection: close` (swift-nio-ssl holds it until the handshake is done)
/// and completes when the whole response came.
private final class OneGet: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let done: EventLoopPromise<Void>
    private var status: HTTPResponseStatus?
    private var finished = false

    init(host: String, done: EventLoopPromise<Void>) {
        self.host = host
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): status = head.status
        case .body: break
        case .end:
            finish(status == .ok ? .success(()) : .failure(BenchmarkFailure("partner answered \(String(describing: status))")))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(BenchmarkFailure("closed before the whole response")))
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<Void, any Error>) {
        guard !finished else { return }
        finished = true
        done.completeWith(result)
    }
}

/// One pinned request to the partner: a new connection, the full handshake through the store's
/// `PinningTLSVerifier` (trust evaluation, then the pins; a refusal downloads the list once
/// within the store's refusal budget and decides again), then a GET.
private func pinnedRequest(verifier: PinningTLSVerifier, context: NIOSSLContext, host: String, port: Int,
                           group: any EventLoopGroup) async -> RequestOutcome {
    let eventLoop = group.next()
    let done = eventLoop.makePromise(of: Void.self)
    let box = Guarded<PinningDecision?>(nil)
    // A request never hangs the measurement: a refusal's download has its own 20 s deadline.
    let deadline = eventLoop.scheduleTask(in: .seconds(60)) { done.fail(BenchmarkFailure("no answer within 60 s")) }
    let connected = ClientBootstrap(group: eventLoop)
        .connectTimeout(.seconds(10))
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(verifier.makeClientHandler(context: context, serverHostname: host, port: port,
                                                                   onDecision: { decision in box.withLock { $0 = decision } }))
                try pipeline.addHTTPClientHandlers()
                try pipeline.addHandler(OneGet(host: host, done: done))
            }
        }
        .connect(host: "127.0.0.1", port: port)
    connected.whenFailure { done.fail($0) }
    let result: Result<Void, any Error>
    do {
        try await done.futureResult.get()
        result = .success(())
    } catch {
        result = .failure(error)
    }
    deadline.cancel()
    if let channel = try? await connected.get() { channel.close(promise: nil) }
    let decision = box.withLock { $0 }
    switch (result, decision) {
    case (.success, let decision?) where decision.isAllowed: return .allowed
    case (_, let decision?) where !decision.isAllowed: return .refused
    case (.failure(let error), _): return .failed("\(error)")
    case (.success, _): return .failed("a response without a pin decision")
    }
}

// MARK: - The list server's traffic, per store

/// The real URLSession fetcher, counting the list server's answers.
private final class CountingFetcher: FingerprintListFetcher {
    private let inner = URLSessionListFetcher()
    /// (when, status): -1 for a request that got no answer.
    let answers = Guarded<[(Date, Int)]>([])

    func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        do throws(PinStoreError) {
            let response = try await inner.fetch(request)
            answers.withLock { $0.append((Date(), response.statusCode)) }
            return response
        } catch {
            answers.withLock { $0.append((Date(), -1)) }
            throw error
        }
    }
}

/// One store of the fleet, its request loop and what it saw.
private final class FleetStore: Sendable {
    let store: PinStore
    let fetcher: CountingFetcher
    let verifier: PinningTLSVerifier
    let records = Guarded<[RequestRecord]>([])

    init(store: PinStore, fetcher: CountingFetcher, trustRoots: TrustRoots) {
        self.store = store
        self.fetcher = fetcher
        self.verifier = PinningTLSVerifier(store: store, trustRoots: trustRoots)
    }

    /// One pinned request a second (a request that took longer is followed at once), from
    /// `offset` seconds on, until cancelled.
    func requestEverySecond(offset: Double, context: NIOSSLContext, host: String, port: Int, group: any EventLoopGroup) async {
        try? await Task.sleep(for: .seconds(offset))
        var next = Date()
        while !Task.isCancelled {
            let started = Date()
            let outcome = await pinnedRequest(verifier: verifier, context: context, host: host, port: port, group: group)
            records.withLock { $0.append(RequestRecord(started: started, ended: Date(), outcome: outcome)) }
            next = max(next.addingTimeInterval(1), Date())
            let wait = next.timeIntervalSinceNow
            if wait > 0 { try? await Task.sleep(for: .seconds(wait)) }
        }
    }

    /// The first allowed request started at or after `date`.
    func firstAllowed(startedAtOrAfter date: Date) -> RequestRecord? {
        records.withLock { records in
            records.first { record in
                if case .allowed = record.outcome { return record.started >= date }
                return false
            }
        }
    }
}

// MARK: - The run

/// What one run measured.
private struct RotationRun {
    let label: String
    let stores: Int
    /// Seconds from the cutover to each store's first allowed request (its end); nil: none.
    let windows: [Double?]
    let refusals: [Int]
    let failures: Int
    /// Per store after the cutover: list requests answered 200, 304, other.
    let downloads: [Int]
    let notModified: [Int]
    let otherAnswers: Int
    /// Seconds from the cutover to the first served list pinning the new leaf.
    let publishedAfter: Double?
    /// How the honest vantage point's list says the new pin was decided.
    let newPinSource: String?
    let impostorSeen: Bool
    /// Seconds from the vantage points' start (and start-up probe) to the cutover.
    let cutoverAfterStart: Double
    /// Seconds from the reports that made every vantage point probe to the cutover, if any.
    let probeRequestedBefore: Double?
    let listVersionsServed: Int
}

private func pem(_ certificate: X509Certificate) -> String {
    "-----BEGIN CERTIFICATE-----\n" + certificate.derRepresentation.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        + "\n-----END CERTIFICATE-----\n"
}

/// A free TCP port on 127.0.0.1 for a report endpoint (the file names an address and port).
private func freeLoopbackPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress?.port
    try await channel.close()
    guard let port else { throw BenchmarkFailure("no free port") }
    return port
}

/// Whether a list body pins `fingerprint` (Base64; JSON may escape its slashes).
private func listPins(_ body: Data, _ fingerprint: String) -> Bool {
    let text = String(decoding: body, as: UTF8.self)
    return text.contains(fingerprint) || text.contains(fingerprint.replacingOccurrences(of: "/", with: "\\/"))
}

private func rotationProgress(_ line: String) {
    FileHandle.standardError.write(Data("[rotation-loop \(ISO8601DateFormatter().string(from: Date()))] \(line)\n".utf8))
}

/// POSTs a pin-failure report naming the partner to a vantage point's report endpoint, as a
/// store would: it makes the vantage point probe the partner now.
private func postReport(endpointPort: Int, host: String, partnerPort: Int) async throws {
    let report = PinFailureReport(dateTime: Date(), hostname: host, port: partnerPort, notedHostname: host, includeSubdomains: false,
                                  enforcePinning: true, validatedCertificateChain: [], servedCertificateChain: [], knownPins: [],
                                  effectiveExpirationDate: nil, reason: "pin_mismatch")
    var request = URLRequest(url: URL(string: "http://127.0.0.1:\(endpointPort)/pin-reports")!)
    request.httpMethod = "POST"
    request.httpBody = try report.jsonData()
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    let (_, response) = try await URLSession.shared.data(for: request)
    guard (response as? HTTPURLResponse)?.statusCode == 202 else { throw BenchmarkFailure("the report endpoint answered \(response)") }
}

/// One run. The cutover comes `cutoverAfterStart` seconds after the vantage points started (and
/// probed); when nil, a report to every vantage point at least 35 s after the start makes each
/// probe, and the cutover comes 5 s later: the stores' reports then land within the 30 s in
/// which a report causes no immediate probe.
private func rotationRun(stores count: Int, intercepted: Bool, cutoverAfterStart: TimeInterval?, maximumWait: TimeInterval) async throws -> RotationRun {
    let host = "partner.bench.pinstore.test"
    let pki = try TestPKI(hosts: [host])
    let next = try pki.issueLeaf(for: [host])
    let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let partner = try await PartnerServer.start(presenting: pki.leaf, group: serverGroup)
    let impostorServer = try await TestHTTPSServer.start(presenting: pki.impostor)

    // Three vantage points, threshold 2, one shared proposals folder, defaults for every interval.
    let base = scratchDirectory()
    let shared = base.appendingPathComponent("proposals")
    try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
    let keys = try (0..<3).map { _ in try P256PrivateKey() }
    let publicKeys = try keys.map { try $0.publicKey.x963Representation.base64EncodedString() }
    var endpoints: [Int] = []
    var publishers: [Publisher] = []
    var listURLs: [URL] = []
    for index in 0..<3 {
        let folder = base.appendingPathComponent("vantage\(index)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try keys[index].pkcs8PEM().write(to: folder.appendingPathComponent("signing.key.pem"), atomically: true, encoding: .utf8)
        try pem(pki.root).write(to: folder.appendingPathComponent("anchors.pem"), atomically: true, encoding: .utf8)
        try pem(pki.intermediate).write(to: folder.appendingPathComponent("intermediate.pem"), atomically: true, encoding: .utf8)
        try (pem(pki.root) + pem(pki.impostorRoot)).write(to: folder.appendingPathComponent("both-roots.pem"), atomically: true, encoding: .utf8)
        let isIntercepted = intercepted && index == 0
        var partnerEntry: [String: Any] = ["id": "partner", "host": host, "port": partner.port, "anchors": "anchors.pem", "allowedCAs": ["intermediate.pem"]]
        if isIntercepted {
            // Its own file trusts and allows the impostor's CA: its own rules would publish it.
            partnerEntry["anchors"] = "both-roots.pem"
            partnerEntry["allowedCAs"] = ["intermediate.pem", "both-roots.pem"]
        }
        let endpoint = try await freeLoopbackPort()
        endpoints.append(endpoint)
        let json: [String: Any] = [
            "partners": [partnerEntry],
            "signingKeys": [["file": "signing.key.pem"]],
            "threshold": 2,
            "otherPublisherKeys": publicKeys.enumerated().filter { $0.offset != index }.map(\.element),
            "vantagePoint": ["name": "vantage\(index)", "proposalsFolder": shared.path],
            "reportEndpoint": "127.0.0.1:\(endpoint)",
            "outputFolder": "public", "stateFolder": "state",
        ]
        let file = try PublicationFile(json: try JSONSerialization.data(withJSONObject: json), baseDirectory: folder)
        publishers.append(try PublisherBenchmarkEntryPoints.loopbackPublisher(file: file, probePorts: [isIntercepted ? impostorServer.port : partner.port]))
        listURLs.append(folder.appendingPathComponent("public/list.json"))
    }
    let started = Date()
    let publisherTasks = publishers.map { publisher in Task { try await publisher.run() } }

    // Every list any vantage point writes is read as it appears: none may ever pin the impostor.
    let impostorPin = pki.impostor.certificate.fingerprintBase64
    let newPin = next.certificate.fingerprintBase64
    let watch = Guarded<(seen: [Data], impostor: Bool, newPinServedAt: Date?)>(([], false, nil))
    // Vantage point 1 is honest in both runs: the list server serves its output folder.
    let lists = listURLs
    let readLists: @Sendable () -> Data? = {
        for url in lists {
            guard let body = try? Data(contentsOf: url) else { continue }
            watch.withLock { state in
                if !state.seen.contains(body) {
                    state.seen.append(body)
                    if listPins(body, impostorPin) { state.impostor = true }
                }
            }
        }
        return try? Data(contentsOf: lists[1])
    }
    let firstListDeadline = Date().addingTimeInterval(300)
    var firstList: Data?
    while firstList == nil {
        if Date() > firstListDeadline { throw BenchmarkFailure("no first list within 5 minutes") }
        try await Task.sleep(for: .milliseconds(250))
        if let body = readLists(), listPins(body, pki.leaf.certificate.fingerprintBase64) { firstList = body }
    }
    rotationProgress("\(intercepted ? "intercepted" : "clean"): first list after \(Int(Date().timeIntervalSince(started))) s")
    let listServer = try await TestListServer.start(serving: TestPinList(entries: []), signedWith: try TestListSigningKey())
    listServer.publish(body: firstList!)
    // As `pinstore serve` reloads a changed file: the served bytes follow vantage point 1's list.
    let served = Guarded<(body: Data, versions: Int)>((firstList!, 1))
    let listWatcher = Task {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(200))
            guard let body = readLists() else { continue }
            let changed = served.withLock { state -> Bool in
                guard state.body != body else { return false }
                state.body = body
                state.versions += 1
                return true
            }
            if changed {
                listServer.publish(body: body)
                if listPins(body, newPin) { watch.withLock { if $0.newPinServedAt == nil { $0.newPinServedAt = Date() } } }
            }
        }
    }

    // The fleet.
    var fleet: [FleetStore] = []
    for index in 0..<count {
        let fetcher = CountingFetcher()
        var configuration = PinStore.Configuration(serviceURL: listServer.listURL, publicKey: publicKeys[0], identifier: "store-\(index)",
                                                   storageDirectory: base.appendingPathComponent("store-\(index)"), requireListSignature: true)
        configuration.additionalPublicKeys = Array(publicKeys.dropFirst())
        configuration.signatureThreshold = 2
        configuration.reportURI = URL(string: "http://127.0.0.1:\(endpoints[index % 3])/pin-reports")
        fleet.append(FleetStore(store: try PinStore(configuration: configuration, fetcher: fetcher), fetcher: fetcher, trustRoots: pki.trustRoots))
    }
    let clientContext = try NIOSSLContext(configuration: .makeClientConfiguration())
    let clientGroup = MultiThreadedEventLoopGroup.singleton
    let storeTasks = fleet.map { member in Task { try await member.store.run() } }
    let requestTasks = fleet.enumerated().map { index, member in
        Task { await member.requestEverySecond(offset: Double(index) / Double(count), context: clientContext, host: host, port: partner.port, group: clientGroup) }
    }

    // Every store allows the current leaf first.
    let readyDeadline = Date().addingTimeInterval(300)
    while !fleet.allSatisfy({ $0.firstAllowed(startedAtOrAfter: .distantPast) != nil }) {
        if Date() > readyDeadline { throw BenchmarkFailure("not every store allowed the current leaf within 5 minutes") }
        try await Task.sleep(for: .milliseconds(250))
    }
    let phase = started.addingTimeInterval(cutoverAfterStart ?? 35)
    if phase > Date() { try await Task.sleep(for: .seconds(phase.timeIntervalSinceNow)) }
    var requestedProbeAt: Date?
    if cutoverAfterStart == nil {
        for endpoint in endpoints { try await postReport(endpointPort: endpoint, host: host, partnerPort: partner.port) }
        requestedProbeAt = Date()
        try await Task.sleep(for: .seconds(5))
    }
    let listRequestsBefore = fleet.map { $0.fetcher.answers.withLock { $0.count } }
    let cutover = Date()
    try partner.present(next)
    rotationProgress("\(intercepted ? "intercepted" : "clean"): cutover \(Int(cutover.timeIntervalSince(started))) s after the vantage points started")

    let endDeadline = cutover.addingTimeInterval(maximumWait)
    while !fleet.allSatisfy({ $0.firstAllowed(startedAtOrAfter: cutover) != nil }), Date() < endDeadline {
        try await Task.sleep(for: .milliseconds(250))
    }
    // A few more seconds of requests, so that nothing refused right after is missed.
    try await Task.sleep(for: .seconds(5))
    requestTasks.forEach { $0.cancel() }
    for task in requestTasks { await task.value }
    storeTasks.forEach { $0.cancel() }
    for task in storeTasks { _ = await task.result }
    listWatcher.cancel()
    _ = await listWatcher.result
    _ = readLists()
    // A vantage point that adopts a list the others finished before its own plan had the new
    // pin records it as "observed": any vantage point's "agreement" says how it was decided.
    var sources: [String] = []
    for publisher in publishers {
        sources += await PublisherBenchmarkEntryPoints.publishedPins(of: publisher).filter { $0.pin == next.certificate.fingerprintBase64 }.map(\.source)
    }
    publisherTasks.forEach { $0.cancel() }
    for task in publisherTasks { _ = await task.result }
    try await listServer.shutdown()
    try await impostorServer.shutdown()
    await partner.shutdown()
    try? await serverGroup.shutdownGracefully()

    var windows: [Double?] = [], refusals: [Int] = [], downloads: [Int] = [], notModified: [Int] = []
    var failures = 0, other = 0
    for (index, member) in fleet.enumerated() {
        windows.append(member.firstAllowed(startedAtOrAfter: cutover).map { $0.ended.timeIntervalSince(cutover) })
        let after = member.records.withLock { $0.filter { $0.started >= cutover } }
        refusals.append(after.filter { if case .refused = $0.outcome { true } else { false } }.count)
        failures += after.filter { if case .failed = $0.outcome { true } else { false } }.count
        let answers = member.fetcher.answers.withLock { Array($0.dropFirst(listRequestsBefore[index])) }
        downloads.append(answers.filter { $0.1 == 200 }.count)
        notModified.append(answers.filter { $0.1 == 304 }.count)
        other += answers.filter { $0.1 != 200 && $0.1 != 304 }.count
    }
    let state = watch.withLock { $0 }
    let label = (intercepted ? "one vantage point intercepted" : "clean") + (cutoverAfterStart == nil ? ", cutover 5 s after a probe" : "")
    return RotationRun(label: label, stores: count, windows: windows, refusals: refusals,
                       failures: failures, downloads: downloads, notModified: notModified, otherAnswers: other,
                       publishedAfter: state.newPinServedAt.map { $0.timeIntervalSince(cutover) },
                       newPinSource: sources.contains("agreement") ? "agreement" : sources.first, impostorSeen: state.impostor,
                       cutoverAfterStart: cutover.timeIntervalSince(started), probeRequestedBefore: requestedProbeAt.map { cutover.timeIntervalSince($0) }, listVersionsServed: served.withLock { $0.versions })
}

/// Nearest-rank percentile of `values` (sorted here).
private func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    let rank = max(Int((p * Double(sorted.count)).rounded(.up)) - 1, 0)
    return sorted[min(rank, sorted.count - 1)]
}

private func rows(for run: RotationRun, clean: RotationRun?) -> [Row] {
    let reached = run.windows.compactMap { $0 }
    let missing = run.windows.count - reached.count
    let prefix = "rotation loop, \(run.stores) stores, \(run.label)"
    var rows: [Row] = []
    func seconds(_ value: Double) -> String { String(format: "%.0f s", value) }
    if reached.isEmpty {
        rows.append(Row(name: "\(prefix): refusal window", value: "no store allowed the new leaf", baseline: "-", ratio: "-", target: "p99 <= 120 s", met: false))
        return rows
    }
    let p50 = percentile(reached, 0.5), p99 = percentile(reached, 0.99), worst = reached.max() ?? 0
    rows.append(Row(name: "\(prefix): refusal window p50 / p99 / max", value: "\(seconds(p50)) / \(seconds(p99)) / \(seconds(worst))",
                    baseline: missing > 0 ? "\(missing) stores never allowed it"
                        : run.probeRequestedBefore.map { "cutover \(Int($0)) s after a requested probe" } ?? "cutover \(Int(run.cutoverAfterStart)) s after the start-up probe",
                    ratio: "-", target: "p99 <= 120 s", met: missing == 0 && p99 <= 120))
    if let clean, let cleanP99 = clean.windows.compactMap({ $0 }).isEmpty ? nil : percentile(clean.windows.compactMap { $0 }, 0.99) {
        // One round: a vantage point among several cycles every 30 seconds.
        rows.append(Row(name: "\(prefix): p99 against the clean run", value: seconds(p99), baseline: "clean \(seconds(cleanP99))",
                        ratio: String(format: "%+.0f s", p99 - cleanP99), target: "within one round (30 s)", met: missing == 0 && p99 - cleanP99 <= 30))
    }
    let refusals = run.refusals.sorted()
    rows.append(Row(name: "\(prefix): refusals per store (median / max; total)", value: "\(refusals[refusals.count / 2]) / \(refusals.last ?? 0); \(refusals.reduce(0, +))",
                    baseline: run.failures > 0 ? "\(run.failures) requests failed otherwise" : "no other failure", ratio: "-", target: "report", met: nil))
    let downloads = run.downloads.reduce(0, +), notModified = run.notModified.reduce(0, +)
    let total = downloads + notModified + run.otherAnswers
    rows.append(Row(name: "\(prefix): list requests per store after the cutover (median / max)",
                    value: "\(zip(run.downloads, run.notModified).map { $0 + $1 }.sorted()[run.stores / 2]) / \(zip(run.downloads, run.notModified).map { $0 + $1 }.max() ?? 0)",
                    baseline: "\(downloads) downloads (200), \(notModified) not modified (304), \(run.otherAnswers) other",
                    ratio: total > 0 ? String(format: "304s %.0f%%", Double(notModified) * 100 / Double(total)) : "-", target: "report", met: nil))
    rows.append(Row(name: "\(prefix): cutover to the new pin served", value: run.publishedAfter.map(seconds) ?? "never",
                    baseline: "decided by \(run.newPinSource ?? "-") (K=3 over T=20m otherwise)", ratio: "-",
                    target: "by agreement", met: run.newPinSource == "agreement"))
    rows.append(Row(name: "\(prefix): impostor pin in any list written or served", value: run.impostorSeen ? "YES" : "never",
                    baseline: "\(run.listVersionsServed) list versions served", ratio: "-", target: "never", met: !run.impostorSeen))
    return rows
}

/// The clean run and the intercepted one, each with the cutover a minute after a probe round;
/// then a clean one with the cutover seconds after a probe (reports inside the probe gap):
/// `stores` stores each.
func rotationLoopRows(stores: Int = 50, only: String? = nil, maximumWait: TimeInterval = 900) async throws -> [Row] {
    // `after-probe` alone: the third run only.
    if only == "after-probe" {
        return rows(for: try await rotationRun(stores: stores, intercepted: false, cutoverAfterStart: nil, maximumWait: maximumWait), clean: nil)
    }
    let clean = try await rotationRun(stores: stores, intercepted: false, cutoverAfterStart: 60, maximumWait: maximumWait)
    let intercepted = try await rotationRun(stores: stores, intercepted: true, cutoverAfterStart: 60, maximumWait: maximumWait)
    let justAfterProbe = try await rotationRun(stores: stores, intercepted: false, cutoverAfterStart: nil, maximumWait: maximumWait)
    return rows(for: clean, clean: nil) + rows(for: intercepted, clean: clean) + rows(for: justAfterProbe, clean: nil)
}
