#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore

/// Carries URLSession requests over a ``PinnedConnectionPool``: https only, every redirect hop
/// pinned for its own host, failures as `URLError`s.
final class PinnedHTTPSTransport: Sendable {
    /// Redirect hops followed before failing with `URLError(.httpTooManyRedirects)` (Foundation's limit).
    static let maximumRedirects = 16
    let pool: PinnedConnectionPool
    /// The bytes of the bodies buffered for completion handlers, across every request of the
    /// configuration (``PinnedTransportLimits/bufferedBodyBudget``).
    let bodyBudget: BodyBudget
    let group: any EventLoopGroup
    /// The resource deadlines of every load, under one timer.
    let deadlineTimer: ResourceDeadlineTimer
    /// The configuration values captured when `.pinned(...)` made it: used when the session's own
    /// configuration cannot be read from the task.
    let defaults: SessionSettings
    /// The logger the session was configured with (refusals at debug, faults at error).
    let logger: Logger
    /// The per-request objects alive, this transport's and its pool's (``LiveRequestObjects``).
    let liveObjects = LiveRequestObjects()

    /// What a request takes from its session's configuration.
    struct SessionSettings: @unchecked Sendable {
        // @unchecked: HTTPCookieStorage is thread-safe but not marked Sendable.
        var requestTimeout: TimeInterval
        var resourceTimeout: TimeInterval
        var additionalHeaders: [String: String]
        var shouldSetCookies: Bool
        var cookieStorage: HTTPCookieStorage?

        init(_ configuration: URLSessionConfiguration) {
            requestTimeout = configuration.timeoutIntervalForRequest
            resourceTimeout = configuration.timeoutIntervalForResource
            var headers: [String: String] = [:]
            for (name, value) in configuration.httpAdditionalHeaders ?? [:] {
                if let name = name as? String, let value = value as? String { headers[name] = value }
            }
            additionalHeaders = headers
            shouldSetCookies = configuration.httpShouldSetCookies
            cookieStorage = configuration.httpCookieStorage
        }
    }

    /// The settings of the session a request came from (a session's configuration never
    /// changes, so the last one is kept; reading `URLSession.configuration` makes a copy).
    func settings(of session: URLSession) -> SessionSettings {
        if let cached = lastSettings.withLock({ $0.session === session ? $0.settings : nil }) {
            return cached
        }
        let settings = SessionSettings(session.configuration)
        lastSettings.withLock { $0 = LastSettings(session: session, settings: settings) }
        return settings
    }

    private struct LastSettings {
        weak var session: URLSession?
        var settings: SessionSettings?
    }

    private let lastSettings = Locked(LastSettings())

    /// Where a response goes. Streaming sinks get the final response and its body piece by piece;
    /// the others get everything at the end from ``load(_:settings:body:sink:)``.
    protocol Sink: Sendable {
        /// Whether the body is delivered in pieces as it arrives.
        var streams: Bool { get }
        func receive(_ response: HTTPURLResponse)
        /// Returns false when the consumer is behind: reading pauses until `resume` is called.
        func receive(_ data: Data, resume: @escaping @Sendable () -> Void) -> Bool
        /// The load is done: `data` is the whole body unless the sink streams. Called as soon as
        /// the final response ends (on the event loop, sparing a thread hop), and again by the
        /// caller when the load returns: only the first call counts.
        func complete(_ response: HTTPURLResponse, _ data: Data)
    }

    init(verifier: PinningTLSVerifier, settings: SessionSettings, maximumConnectionsPerHost: Int, limits: PinnedTransportLimits = .init(),
         group: any EventLoopGroup) {
        defaults = settings
        bodyBudget = BodyBudget(limits: limits)
        logger = verifier.logger
        self.group = group
        deadlineTimer = ResourceDeadlineTimer(eventLoop: group.next())
        var tls = TLSConfiguration.makeClientConfiguration()
        // HTTP/2 when the server offers it, else HTTP/1.1.
        tls.applicationProtocols = ["h2", "http/1.1"]
        // The verification callback replaces swift-nio-ssl's chain check (it evaluates against the
        // configured trust roots itself), so the context needs no trust material: loading the
        // system bundle here would cost milliseconds for nothing. `.fullVerification` stays, so
        // the callback's verdict and the host name check are enforced.
        tls.trustRoots = .certificates([])
        tls.certificateVerification = .fullVerification
        let context: Result<NIOSSLContext, PinnedHTTPFailure>
        do {
            // swift-nio-ssl's defaults on purpose: the verifier derives from this context one
            // per host requirements (ATS's minimums, or a host's exception), and never lowers
            // what its base asks.
            context = .success(try NIOSSLContext(configuration: tls))
        } catch {
            context = .failure(.setup("The TLS context could not be created: \(error)"))
        }
        var poolConfiguration = PinnedConnectionPool.Configuration()
        poolConfiguration.maximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        pool = PinnedConnectionPool(configuration: poolConfiguration, verifier: verifier, context: context, group: group,
                                    liveObjects: liveObjects)
    }

    /// Asked before each redirect is followed, with the redirect response and the request for
    /// the next hop; returns the request to send (changed or not), or nil to stop and deliver
    /// the redirect response itself (URLSession's `willPerformHTTPRedirection`).
    typealias RedirectDecider = @Sendable (HTTPURLResponse, URLRequest) async -> URLRequest?

    /// Loads `request`, following redirects. Returns the final response and, unless `sink`
    /// streams, its whole body.
    func load(_ request: URLRequest, settings: SessionSettings, body: Data?, sink: any Sink,
              redirectDecider: RedirectDecider? = nil, started: Started? = nil) async throws -> (HTTPURLResponse, Data) {
        let started = started ?? start(request, settings: settings, body: body, sink: sink, firstHop: false)
        let deadline = started.deadline
        defer { deadline.finish() }
        do {
            return try await followRedirects(request, settings: settings, body: body, sink: sink, redirectDecider: redirectDecider,
                                             deadline: deadline, firstHop: started.firstHop)
        } catch let error as URLError where error.code == .cancelled && deadline.expired {
            throw Self.urlError(.timedOut, request.url, "The resource timeout (timeoutIntervalForResource, \(settings.resourceTimeout) s) expired.")
        }
    }

    /// A load begun on the caller's thread: its resource timer runs, and its first hop is with
    /// the pool, so the request goes out without waiting for a task to be scheduled.
    struct Started: Sendable {
        let deadline: ResourceDeadline
        let firstHop: Result<Hop, any Error>?
    }

    /// Starts the resource timer and, when `firstHop`, hands the first hop to the pool. Pass the
    /// result to ``load(_:settings:body:sink:redirectDecider:started:)``.
    func start(_ request: URLRequest, settings: SessionSettings, body: Data?, sink: any Sink, firstHop: Bool = true) -> Started {
        // timeoutIntervalForResource bounds the whole load, however slowly the server drips:
        // one timer on an event loop, which cancels whatever hop is running when it fires.
        let deadline = ResourceDeadline(liveObjects: liveObjects)
        if settings.resourceTimeout > 0, settings.resourceTimeout < 100 * 365 * 86_400 {
            deadline.start(with: deadlineTimer, at: .now() + .nanoseconds(Int64(settings.resourceTimeout * 1_000_000_000)))
        }
        guard firstHop else { return Started(deadline: deadline, firstHop: nil) }
        let hop = Result<Hop, any Error> {
            try startHop(request, url: try Self.checkedURL(request), settings: settings, body: body ?? request.httpBody, sink: sink,
                         deadline: deadline)
        }
        return Started(deadline: deadline, firstHop: hop)
    }

    /// Ends a started load without a task in the common case: when its first hop ends with the
    /// final response (which the sink already has, from the event loop), the load is done there
    /// and then. A redirect to follow, a failure to report, or a first hop that could not start
    /// calls `continueInTask`, which must run ``load(_:settings:body:sink:redirectDecider:started:)``
    /// with `started`. Spares every plain request a task and two thread wake-ups.
    func finishWithoutTask(_ started: Started, continueInTask: @escaping @Sendable () -> Void) {
        guard case .success(let hop)? = started.firstHop else {
            continueInTask()
            return
        }
        hop.outcome.whenComplete { result in
            if case .success(.done) = result {
                started.deadline.finish()
            } else {
                continueInTask()
            }
        }
    }

    /// The resource timeout of one load: when it expires, the running hop is cancelled.
    final class ResourceDeadline: Sendable {
        private struct State {
            var timer: ResourceDeadlineTimer?
            var expired = false
            var finished = false
            var running: PinnedConnectionPool.Ticket?
        }

        private let state = Locked(State())
        private let liveObjects: LiveRequestObjects

        init(liveObjects: LiveRequestObjects = LiveRequestObjects()) {
            self.liveObjects = liveObjects
            liveObjects.made(.resourceDeadline)
        }

        deinit {
            liveObjects.freed(.resourceDeadline)
        }

        var expired: Bool { state.withLock { $0.expired } }

        func start(with timer: ResourceDeadlineTimer, at deadline: NIODeadline) {
            state.withLock { $0.timer = timer }
            timer.register(self, at: deadline)
        }

        /// The deadline passed: the running hop (and any later one) is cancelled.
        func expire() {
            let running = state.withLock { state -> PinnedConnectionPool.Ticket? in
                guard !state.finished else { return nil }
                state.expired = true
                return state.running
            }
            running?.cancel()
        }

        /// The hop now running; cancelled at once if the deadline already passed.
        func run(_ ticket: PinnedConnectionPool.Ticket) {
            let expired = state.withLock { state -> Bool in
                state.running = ticket
                return state.expired
            }
            if expired { ticket.cancel() }
        }

        func finish() {
            state.withLock { state in
                state.finished = true
                state.running = nil
                return state.timer
            }?.unregister(self)
        }
    }

    /// The loads' resource deadlines, with one timer for all of them, armed at the earliest.
    ///
    /// A timer per load cost two cross-thread operations on an event loop per request (schedule
    /// and cancel, each able to wake it). Here a load registers and unregisters under a lock;
    /// the timer is rescheduled only when a load's deadline is earlier than the one it is armed
    /// for, which loads with a session's fixed timeout, registered in order, never are.
    final class ResourceDeadlineTimer: Sendable {
        private struct Armed {
            var at: NIODeadline
            var task: Scheduled<Void>
        }

        private struct State {
            var pending: [ObjectIdentifier: (at: NIODeadline, load: ResourceDeadline)] = [:]
            var armed: Armed?
        }

        private let eventLoop: any EventLoop
        private let state = Locked(State())

        init(eventLoop: any EventLoop) {
            self.eventLoop = eventLoop
        }

        func register(_ load: ResourceDeadline, at deadline: NIODeadline) {
            let needsArming = state.withLock { state -> Bool in
                state.pending[ObjectIdentifier(load)] = (deadline, load)
                return state.armed.map { $0.at > deadline } ?? true
            }
            if needsArming { arm(at: deadline) }
        }

        func unregister(_ load: ResourceDeadline) {
            _ = state.withLock { $0.pending.removeValue(forKey: ObjectIdentifier(load)) }
        }

        /// Pending loads (for tests).
        var pendingCount: Int { state.withLock { $0.pending.count } }

        private func arm(at deadline: NIODeadline) {
            let task = eventLoop.scheduleTask(deadline: deadline) { [weak self] () -> Void in self?.fire() }
            let superseded = state.withLock { state -> Scheduled<Void>? in
                // Another caller may have armed it meanwhile: the earlier of the two stays.
                if let armed = state.armed, armed.at <= deadline { return task }
                let previous = state.armed?.task
                state.armed = Armed(at: deadline, task: task)
                return previous
            }
            superseded?.cancel()
        }

        private func fire() {
            let now = NIODeadline.now()
            let (due, next) = state.withLock { state -> ([ResourceDeadline], NIODeadline?) in
                state.armed = nil
                var due: [ResourceDeadline] = []
                var next: NIODeadline?
                for (key, entry) in state.pending {
                    if entry.at <= now {
                        due.append(entry.load)
                        state.pending[key] = nil
                    } else {
                        next = min(next ?? entry.at, entry.at)
                    }
                }
                return (due, next)
            }
            for load in due { load.expire() }
            if let next { arm(at: next) }
        }
    }

    private func followRedirects(_ request: URLRequest, settings: SessionSettings, body: Data?, sink: any Sink,
                                 redirectDecider: RedirectDecider?, deadline: ResourceDeadline,
                                 firstHop: Result<Hop, any Error>?) async throws -> (HTTPURLResponse, Data) {
        var current = request
        var currentBody = body ?? request.httpBody
        var hops = 0
        while true {
            let url = try Self.checkedURL(current)
            let hop: Hop
            if hops == 0, let firstHop {
                hop = try firstHop.get()
            } else {
                hop = try startHop(current, url: url, settings: settings, body: currentBody, sink: sink, deadline: deadline)
            }
            let outcome = try await finish(hop)
            switch outcome {
            case .redirect(let response, let next, let redirectBody):
                hops += 1
                guard hops <= Self.maximumRedirects else {
                    throw Self.urlError(.httpTooManyRedirects, url, "More than \(Self.maximumRedirects) redirects.")
                }
                var proposed = RedirectPolicy.nextRequest(after: current, from: url, to: next, status: response.statusCode)
                if proposed.httpMethod == "GET", current.httpMethod != "GET" { currentBody = nil }
                if let redirectDecider {
                    guard let decided = await redirectDecider(response, proposed) else {
                        // The delegate declined: the redirect response is the answer.
                        if sink.streams {
                            sink.receive(response)
                            if !redirectBody.isEmpty { _ = sink.receive(redirectBody) {} }
                        }
                        return (response, redirectBody)
                    }
                    proposed = decided
                }
                // Whatever the next request is, it goes through the https check and its own
                // host's pin check like the first one.
                current = proposed
            case .done(let response, let data):
                return (response, data)
            }
        }
    }

    fileprivate enum Outcome: @unchecked Sendable {
        // @unchecked: HTTPURLResponse is immutable once made.
        case redirect(HTTPURLResponse, URL, Data)
        case done(HTTPURLResponse, Data)
    }

    /// The outcome of one hop: completed once, on the connection's event loop (or by the pool),
    /// and handed to a callback or a waiting task right there. An `EventLoopPromise` on
    /// `group.next()` was often on another loop than the connection's, and completing it woke
    /// that loop on every request.
    fileprivate final class HopOutcome: Sendable {
        private struct State {
            var result: Result<Outcome, any Error>?
            var waiters: [@Sendable (Result<Outcome, any Error>) -> Void] = []
        }

        private let state = Locked(State())
        private let liveObjects: LiveRequestObjects

        init(liveObjects: LiveRequestObjects) {
            self.liveObjects = liveObjects
            liveObjects.made(.hopOutcome)
        }

        deinit {
            liveObjects.freed(.hopOutcome)
        }

        /// The first result counts; later ones are dropped.
        func complete(_ result: Result<Outcome, any Error>) {
            let waiters = state.withLock { state -> [@Sendable (Result<Outcome, any Error>) -> Void] in
                guard state.result == nil else { return [] }
                state.result = result
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter(result) }
        }

        func whenComplete(_ body: @escaping @Sendable (Result<Outcome, any Error>) -> Void) {
            let done = state.withLock { state -> Result<Outcome, any Error>? in
                if let result = state.result { return result }
                state.waiters.append(body)
                return nil
            }
            if let done { body(done) }
        }

        func get() async throws -> Outcome {
            try await withCheckedThrowingContinuation { continuation in
                whenComplete { continuation.resume(with: $0) }
            }
        }
    }

    /// One hop under way: the pool has the request; its outcome completes `outcome`.
    struct Hop: Sendable {
        fileprivate let outcome: HopOutcome
        let ticket: PinnedConnectionPool.Ticket
    }

    /// `seconds` as the pool's request timeout, never trapping: infinity, NaN or more than a
    /// century (a common way to say "no timeout") is a century; zero or less is a millisecond.
    static func requestTimeout(seconds: TimeInterval) -> TimeAmount {
        let century: TimeInterval = 100 * 365 * 86_400
        let bounded = seconds.isFinite ? min(max(seconds, 0.001), century) : century
        return .nanoseconds(Int64(bounded * 1_000_000_000))
    }

    /// Hands one hop to the pool, on the calling thread.
    private func startHop(_ request: URLRequest, url: URL, settings: SessionSettings, body: Data?, sink: any Sink,
                          deadline: ResourceDeadline) throws -> Hop {
        let target = try Self.target(of: url)
        let head = try Self.head(for: request, url: url, target: target, settings: settings, bodyLength: body?.count)
        let timeout = min(request.timeoutInterval > 0 ? request.timeoutInterval : settings.requestTimeout, settings.requestTimeout)
        let poolRequest = PinnedConnectionPool.Request(
            key: target.key, head: head, body: body.map { ByteBuffer(bytes: $0) },
            timeout: Self.requestTimeout(seconds: timeout))
        let outcome = HopOutcome(liveObjects: liveObjects)
        let receiver = HopReceiver(url: url, sink: sink, settings: settings, budget: bodyBudget, outcome: outcome,
                                   liveObjects: liveObjects)
        let ticket = pool.execute(poolRequest, receiver: receiver)
        receiver.ticket.withLock { $0 = ticket }
        deadline.run(ticket)
        return Hop(outcome: outcome, ticket: ticket)
    }

    /// Waits for a hop; cancelling the waiting task cancels the hop.
    private func finish(_ hop: Hop) async throws -> Outcome {
        try await withTaskCancellationHandler {
            try await hop.outcome.get()
        } onCancel: {
            hop.ticket.cancel()
        }
    }

    /// The URL's scheme, host and port, refusing what is not https.
    struct Target {
        var key: PinnedConnectionPoolStateMachine.Key
        var hostHeader: String
        var uri: String
    }

    static func checkedURL(_ request: URLRequest) throws -> URL {
        guard let url = request.url else { throw urlError(.badURL, nil, "The request has no URL.") }
        return url
    }

    static func target(of given: URL) throws -> Target {
        // URL's own accessors: it parsed itself once already, where `URLComponents` parsed it
        // again on every request (11,500 instructions, issue 33). A relative URL is resolved
        // first, as `URLComponents(url:resolvingAgainstBaseURL: true)` did.
        let url = given.baseURL == nil ? given : given.absoluteURL
        guard let scheme = url.scheme?.lowercased(), let host = url.host(percentEncoded: true), !host.isEmpty else {
            throw urlError(.badURL, given, "The URL has no host.")
        }
        guard scheme == "https" else {
            // Plain http would bypass pinning altogether: a pinned session refuses it.
            throw urlError(.appTransportSecurityRequiresSecureConnection, given,
                           "A pinned session carries https only; \(given.absoluteString) is \(scheme). Use https, or an unpinned session for this URL.")
        }
        // The ASCII (IDNA, `xn--`) form is what DNS, SNI, the certificate and the pins use.
        // `URL` gives a non-ASCII host percent-encoded, and an IPv6 literal without its
        // brackets; `URLComponents` gives the IDNA form (and keeps the brackets of a literal
        // with a zone), so it decides for those rare hosts.
        let encoded: String
        if host.utf8.contains(UInt8(ascii: "%")) {
            guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
                  let idna = components.encodedHost, !idna.isEmpty else {
                throw urlError(.badURL, given, "The URL has no host.")
            }
            encoded = idna
        } else if host.utf8.contains(UInt8(ascii: ":")) {
            encoded = "[" + host + "]"
        } else {
            encoded = host
        }
        // The host made once, here: the pool's key, SNI, the chain check and the pin lookup all
        // use it (`API.Example.com.` and `api.example.com` are one host, `[::1]` is `::1`).
        guard let name = try? HostName(encoded) else {
            throw urlError(.badURL, given, "The URL's host (\(encoded)) is not a host name.")
        }
        let lowered = encoded.lowercased()
        let port = url.port ?? 443
        let path = url.path(percentEncoded: true)
        let query = url.query(percentEncoded: true)
        var uri = ""
        uri.reserveCapacity(max(path.utf8.count, 1) + (query.map { $0.utf8.count + 1 } ?? 0))
        uri += path.isEmpty ? "/" : path
        if let query {
            uri += "?"
            uri += query
        }
        return Target(key: .init(host: name, port: port), hostHeader: port == 443 ? lowered : "\(lowered):\(port)", uri: uri)
    }

    /// The request head: the caller's headers, the configuration's additional ones, cookies, and
    /// the URL's host. A caller's `Host` naming another host is refused: SNI, the chain check
    /// and the pin lookup all use the URL's host, so the request must go to it.
    ///
    /// Every name, value, the method and the target are checked here, as they are added, against
    /// what HTTP allows on the wire (``RequestHeadRules``): a header that could smuggle a second
    /// request fails the request before any connection is asked for it. NIO's
    /// `NIOHTTPRequestHeadersValidator` made the same checks in a pass of its own over the
    /// finished head, on the event loop, for every request (issue 33).
    static func head(for request: URLRequest, url: URL, target: Target, settings: SessionSettings, bodyLength: Int?) throws -> HTTPRequestHead {
        let own = request.allHTTPHeaderFields ?? [:]
        var headers = HTTPHeaders()
        headers.reserveCapacity(own.count + settings.additionalHeaders.count + 3)
        func add(_ name: String, _ value: String) throws {
            guard RequestHeadRules.isToken(name), RequestHeadRules.isFieldValue(value) else {
                throw urlError(.badURL, url, "The request's header field \(name.debugDescription) is not valid HTTP (a name must be a token, a value may hold no control character), so nothing was sent.")
            }
            headers.add(name: name, value: value)
        }
        for (name, value) in own {
            switch RequestHeadRules.kind(of: name) {
            case .host:
                let host = value.lowercased()
                if host != target.hostHeader, host != target.key.host.text {
                    throw urlError(.badURL, url, "The request's Host header (\(value)) names another host than its URL (\(target.hostHeader)); a pinned session checks and sends the URL's host only. Put the host in the URL.")
                }
            case .framing:
                // Set below from the body this request really has.
                break
            case .other:
                try add(name, value)
            }
        }
        headers.add(name: "Host", value: target.hostHeader)
        for (name, value) in settings.additionalHeaders where RequestHeadRules.kind(of: name) == .other && !headers.contains(name: name) {
            try add(name, value)
        }
        if settings.shouldSetCookies, !headers.contains(name: "cookie"), let storage = settings.cookieStorage,
           let cookies = storage.cookies(for: url), !cookies.isEmpty,
           let value = HTTPCookie.requestHeaderFields(with: cookies)["Cookie"], !value.isEmpty {
            try add("Cookie", value)
        }
        let method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        if let bodyLength {
            headers.add(name: "Content-Length", value: String(bodyLength))
        } else if method == .POST || method == .PUT || method == .PATCH {
            headers.add(name: "Content-Length", value: "0")
        }
        if case .RAW(let raw) = method, !RequestHeadRules.isToken(raw) {
            throw urlError(.badURL, url, "The request's method \(raw.debugDescription) is not an HTTP token, so nothing was sent.")
        }
        guard RequestHeadRules.isRequestTarget(target.uri) else {
            throw urlError(.badURL, url, "The request's target \(target.uri.debugDescription) holds characters HTTP does not allow there, so nothing was sent.")
        }
        return HTTPRequestHead(version: .http1_1, method: method, uri: target.uri, headers: headers)
    }

    static func urlError(for failure: PinnedHTTPFailure, url: URL) -> URLError {
        switch failure {
        case .pinning(let pinning):
            if let violation = pinning.reason.transportSecurityViolation,
               violation.requirement == .minimumTLSVersion || violation.requirement == .forwardSecrecy {
                return urlError(.secureConnectionFailed, url,
                                "The TLS handshake with \(pinning.host) fell short of a transport minimum, so no request was sent: \(pinning)",
                                underlying: pinning)
            }
            return urlError(.serverCertificateUntrusted, url,
                            "The certificate of \(pinning.host) was refused, so no request was sent: \(pinning)", underlying: pinning)
        case .timedOut:
            return urlError(.timedOut, url, "The request timed out.")
        case .cancelled:
            return urlError(.cancelled, url, "The request was cancelled.")
        case .cannotConnect(let detail):
            return urlError(.cannotConnectToHost, url, "Could not connect to the server: \(detail)")
        case .tls(let detail):
            return urlError(.secureConnectionFailed, url, "The TLS handshake failed: \(detail)")
        case .connectionLost(let detail):
            return urlError(.networkConnectionLost, url, detail)
        case .misbehaving(let cause):
            switch cause.backing {
            case .responseTooLarge, .bufferedBodyBudgetExceeded:
                return urlError(.dataLengthExceedsMaximum, url, cause.description, underlying: cause)
            case .responseHeadTooLarge, .tooManyInformationalResponses, .http2ContinuationFlood, .http2ControlFrameFlood,
                 .http2PushRefused, .http2ProtocolViolation, .http2GoAway:
                return urlError(.badServerResponse, url, cause.description, underlying: cause)
            }
        case .badResponse(let detail):
            return urlError(.badServerResponse, url, detail)
        case .setup(let detail):
            return urlError(.unknown, url, detail)
        }
    }

    static func urlError(_ code: URLError.Code, _ url: URL?, _ description: String, underlying: (any Error)? = nil) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url {
            info[NSURLErrorFailingURLErrorKey] = url
        }
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return URLError(code, userInfo: info)
    }

    /// Receives one hop's response on the event loop: a redirect is read to its end and dropped;
    /// the final response is buffered (bounded) or streamed to the sink with backpressure.
    private final class HopReceiver: PinnedResponseReceiver, @unchecked Sendable {
        // @unchecked: its state is touched on the connection's event loop only, one call after
        // the other (a failure before any connection comes from the pool, before that).
        let url: URL
        let sink: any Sink
        let settings: SessionSettings
        let ticket = Locked<PinnedConnectionPool.Ticket?>(nil)
        private let outcome: HopOutcome
        private let budget: BodyBudget
        private var response: HTTPURLResponse?
        private var redirect: URL?
        /// The body so far (not for a streaming sink's final response). `Data`, not `ByteBuffer`:
        /// it is handed over as it is, where a buffer would be copied whole at the end.
        private var body = Data()
        /// The bytes of ``body`` taken from the budget.
        private var reserved = 0
        private var failed = false

        private let liveObjects: LiveRequestObjects

        init(url: URL, sink: any Sink, settings: SessionSettings, budget: BodyBudget, outcome: HopOutcome,
             liveObjects: LiveRequestObjects) {
            self.url = url
            self.sink = sink
            self.settings = settings
            self.budget = budget
            self.outcome = outcome
            self.liveObjects = liveObjects
            liveObjects.made(.hopReceiver)
        }

        deinit {
            if reserved > 0 { budget.release(reserved) }
            liveObjects.freed(.hopReceiver)
        }

        func receiveHead(_ head: HTTPResponseHead) {
            var fields: [String: String] = [:]
            fields.reserveCapacity(head.headers.count)
            for (name, value) in head.headers {
                if let existing = fields[name] { fields[name] = existing + ", " + value } else { fields[name] = value }
            }
            let status = Int(head.status.code)
            // Made here, on the connection's event loop, and handed over finished. What
            // FoundationNetworking forces: the only way to give a URLSession a response is an
            // `HTTPURLResponse`, and its initializer is the costliest step of a kept-alive request
            // (about 109,000 instructions for nginx's 8 headers: `capitalized` on every name,
            // three case-insensitive scans that lowercase every name, the Content-Type parsed
            // one scalar at a time into new strings). It cannot be made lazily or cheaper (its
            // header storage is private and set only there), so it goes where it costs least:
            // the event loops run on every core, while the task's work queue, where everything
            // else FoundationNetworking does for a request runs, is one serial queue per session
            // and caps concurrent requests (issue 33).
            let version = head.version == .http1_1 ? "HTTP/1.1" : "HTTP/\(head.version.major).\(head.version.minor)"
            guard let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: version, headerFields: fields) else {
                fail(.badResponse("The response could not be represented."), afterResponseBytes: true)
                return
            }
            if settings.shouldSetCookies, let storage = settings.cookieStorage, head.headers.contains(name: "set-cookie") {
                let cookies = HTTPCookie.cookies(withResponseHeaderFields: fields, for: url)
                if !cookies.isEmpty { storage.setCookies(cookies, for: url, mainDocumentURL: nil) }
            }
            self.response = response
            if [301, 302, 303, 307, 308].contains(status), let location = head.headers.first(name: "location"),
               let next = URL(string: location, relativeTo: url)?.absoluteURL {
                redirect = next
            } else if sink.streams {
                sink.receive(response)
            }
        }

        func receiveBodyPart(_ part: ByteBuffer) -> Bool {
            guard !failed else { return true }
            if sink.streams, redirect == nil {
                let ticket = self.ticket.withLock { $0 }
                return sink.receive(Data(part.readableBytesView)) { ticket?.resumeReading() }
            }
            if let refusal = budget.reserve(part.readableBytes, holding: reserved) {
                failed = true
                releaseBody()
                let ticket = self.ticket.withLock { $0 }
                resume(.failure(PinnedHTTPSTransport.urlError(for: .misbehaving(refusal), url: url)))
                ticket?.cancel()
                return false
            }
            reserved += part.readableBytes
            part.withUnsafeReadableBytes { body.append($0.assumingMemoryBound(to: UInt8.self)) }
            return true
        }

        /// Drops the body and gives its bytes back to the budget.
        private func releaseBody() {
            body = Data()
            if reserved > 0 { budget.release(reserved) }
            reserved = 0
        }

        func receiveEnd() {
            guard let response else { return }
            let data = body
            // Handed over: the caller holds it from here on.
            releaseBody()
            if let redirect {
                resume(.success(.redirect(response, redirect, data)))
            } else {
                sink.complete(response, data)
                resume(.success(.done(response, data)))
            }
        }

        func fail(_ failure: PinnedHTTPFailure, afterResponseBytes: Bool) {
            failed = true
            releaseBody()
            resume(.failure(PinnedHTTPSTransport.urlError(for: failure, url: url)))
        }

        private func resume(_ result: Result<Outcome, any Error>) {
            // A promise completes once; later results are dropped.
            outcome.complete(result)
        }
    }
}

/// The bytes buffered for completion-handler bodies across a configuration's requests, against
/// ``PinnedTransportLimits/bufferedBodyBudget``; a response also stays within the per-response cap.
final class BodyBudget: Sendable {
    let limits: PinnedTransportLimits
    private struct Usage {
        var inUse = 0
        var peak = 0
    }

    private let usage = Locked(Usage())

    init(limits: PinnedTransportLimits) {
        self.limits = limits
    }

    /// Takes `bytes` more for a response that holds `holding` already; nil when granted, else
    /// the limit it would pass (nothing is taken then).
    func reserve(_ bytes: Int, holding: Int) -> PinnedTransportError? {
        if holding + bytes > limits.perResponseBodyLimit {
            return limits.perResponseBodyLimit < PinnedTransportLimits.maximumBufferedBodySize
                ? .bufferedBodyBudgetExceeded(budget: limits.bufferedBodyBudget)
                : .responseTooLarge(limit: PinnedTransportLimits.maximumBufferedBodySize)
        }
        return usage.withLock { usage in
            guard usage.inUse + bytes <= limits.bufferedBodyBudget else {
                return .bufferedBodyBudgetExceeded(budget: limits.bufferedBodyBudget)
            }
            usage.inUse += bytes
            usage.peak = max(usage.peak, usage.inUse)
            return nil
        }
    }

    func release(_ bytes: Int) {
        usage.withLock { $0.inUse -= bytes }
    }

    /// Bytes held now, and the most held at once so far (for tests).
    var inUse: Int { usage.withLock { $0.inUse } }
    var peak: Int { usage.withLock { $0.peak } }
}
#endif
