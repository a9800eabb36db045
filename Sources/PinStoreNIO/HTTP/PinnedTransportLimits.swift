/// How much a misbehaving server may make the pinned transport hold or do before its request
/// fails (``FoundationNetworking/URLSessionConfiguration/pinned(by:trustRoots:updateOnEmpty:updateOnMismatch:basedOn:logger:limits:)``).
///
/// A pinned connection proves whom the client talks to, not that the server behaves. The
/// per-connection bounds (response head size, informational responses, HTTP/2 control frames
/// and header blocks) are fixed and listed as static constants; the one that depends on the
/// process, the memory for bodies delivered whole, is ``bufferedBodyBudget``.
public struct PinnedTransportLimits: Sendable, Hashable {
    /// The bytes that the bodies of all running completion-handler and `data(from:)` requests of
    /// the sessions made from one pinned configuration may hold together (each is buffered until
    /// it is complete). A response that would take the total past it fails with
    /// `URLError(.dataLengthExceedsMaximum)` and ``PinnedTransportError/bufferedBodyBudgetExceeded(budget:)``.
    /// Delegate-based data tasks stream their bodies and do not count.
    ///
    /// 256 MiB by default: room for a few large responses at once in a server process, and a
    /// bound on what endless bodies can take from it however many requests run. One response
    /// is never buffered beyond ``maximumBufferedBodySize`` either.
    public var bufferedBodyBudget: Int

    /// The default budget, 256 MiB.
    public static let defaultBufferedBodyBudget = 256 << 20

    /// The most one buffered (completion-handler) response body may hold: 512 MiB, or the
    /// budget when that is smaller.
    public static let maximumBufferedBodySize = 512 << 20

    /// The most a response head may take, in bytes: over HTTP/1.1 the status line, the header
    /// lines and every informational (1xx) response before the final one; over HTTP/2 the
    /// decoded header list (`SETTINGS_MAX_HEADER_LIST_SIZE`). 64 KiB.
    public static let maximumResponseHeadSize = 64 * 1024

    /// Informational (1xx) responses accepted before the final response of one request: 10.
    public static let maximumInformationalResponses = 10

    /// Limits with the default budget.
    public init() {
        self.bufferedBodyBudget = Self.defaultBufferedBodyBudget
    }

    /// Limits with `bufferedBodyBudget` bytes for the bodies buffered at once (at least 1).
    public init(bufferedBodyBudget: Int) {
        self.bufferedBodyBudget = max(1, bufferedBodyBudget)
    }

    /// The cap of one buffered response under this budget.
    var perResponseBodyLimit: Int { min(max(1, bufferedBodyBudget), Self.maximumBufferedBodySize) }
}

/// What a server did that made the pinned transport end its request: the underlying error
/// (`NSUnderlyingErrorKey`) of the `URLError` the request fails with.
///
/// Not an enum: a minor release may bound more of what a server can do. Match on ``code``
/// with a `default`, or compare (`error == .http2PushRefused`); the numbers and words a cause
/// carries are ``limit`` and ``detail``.
///
/// ```swift
/// if let cause = urlError.userInfo[NSUnderlyingErrorKey] as? PinnedTransportError {
///     switch cause.code {
///     case .responseTooLarge, .bufferedBodyBudgetExceeded: streamInstead()
///     default: logger.warning("\(cause)")
///     }
/// }
/// ```
public struct PinnedTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which cause this is, without what it carries. A minor release may add members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// A stable name: the cause's static member, e.g. `"responseTooLarge"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }

        /// ``PinnedTransportError/responseTooLarge(limit:)``.
        public static let responseTooLarge = Code("responseTooLarge")
        /// ``PinnedTransportError/bufferedBodyBudgetExceeded(budget:)``.
        public static let bufferedBodyBudgetExceeded = Code("bufferedBodyBudgetExceeded")
        /// ``PinnedTransportError/responseHeadTooLarge(limit:)``.
        public static let responseHeadTooLarge = Code("responseHeadTooLarge")
        /// ``PinnedTransportError/tooManyInformationalResponses(limit:)``.
        public static let tooManyInformationalResponses = Code("tooManyInformationalResponses")
        /// ``PinnedTransportError/http2ContinuationFlood``.
        public static let http2ContinuationFlood = Code("http2ContinuationFlood")
        /// ``PinnedTransportError/http2ControlFrameFlood``.
        public static let http2ControlFrameFlood = Code("http2ControlFrameFlood")
        /// ``PinnedTransportError/http2PushRefused``.
        public static let http2PushRefused = Code("http2PushRefused")
        /// ``PinnedTransportError/http2ProtocolViolation(_:)``.
        public static let http2ProtocolViolation = Code("http2ProtocolViolation")
        /// ``PinnedTransportError/http2GoAway(errorCode:)``.
        public static let http2GoAway = Code("http2GoAway")
    }

    /// The causes this version knows; internal so that our own code must answer a new one.
    enum Backing: Sendable, Hashable {
        case responseTooLarge(limit: Int)
        case bufferedBodyBudgetExceeded(budget: Int)
        case responseHeadTooLarge(limit: Int)
        case tooManyInformationalResponses(limit: Int)
        case http2ContinuationFlood
        case http2ControlFrameFlood
        case http2PushRefused
        case http2ProtocolViolation(String)
        case http2GoAway(errorCode: String)
    }

    let backing: Backing

    private init(_ backing: Backing) { self.backing = backing }

    /// The response body is larger than one buffered response may be
    /// (``PinnedTransportLimits/maximumBufferedBodySize``, or the budget when smaller).
    public static func responseTooLarge(limit: Int) -> PinnedTransportError { .init(.responseTooLarge(limit: limit)) }
    /// The bodies being buffered for this configuration's sessions would pass
    /// ``PinnedTransportLimits/bufferedBodyBudget``.
    public static func bufferedBodyBudgetExceeded(budget: Int) -> PinnedTransportError { .init(.bufferedBodyBudgetExceeded(budget: budget)) }
    /// The response head (status line, headers, 1xx responses before the final one; over
    /// HTTP/2 the header list) is larger than ``PinnedTransportLimits/maximumResponseHeadSize``.
    public static func responseHeadTooLarge(limit: Int) -> PinnedTransportError { .init(.responseHeadTooLarge(limit: limit)) }
    /// More informational (1xx) responses than ``PinnedTransportLimits/maximumInformationalResponses``.
    public static func tooManyInformationalResponses(limit: Int) -> PinnedTransportError { .init(.tooManyInformationalResponses(limit: limit)) }
    /// HTTP/2: a header block split over more CONTINUATION frames in a row than allowed.
    public static let http2ContinuationFlood = PinnedTransportError(.http2ContinuationFlood)
    /// HTTP/2: PING, SETTINGS or other control frames faster than allowed, or more answers to
    /// them waiting to be sent than allowed (a server that sends but does not read).
    public static let http2ControlFrameFlood = PinnedTransportError(.http2ControlFrameFlood)
    /// HTTP/2: a PUSH_PROMISE, although the client announced `SETTINGS_ENABLE_PUSH = 0`.
    public static let http2PushRefused = PinnedTransportError(.http2PushRefused)
    /// HTTP/2: another connection error (flow control, protocol), with swift-nio-http2's words.
    public static func http2ProtocolViolation(_ detail: String) -> PinnedTransportError { .init(.http2ProtocolViolation(detail)) }
    /// HTTP/2: the server ended the connection with an error (a GOAWAY frame whose error code
    /// is not NO_ERROR) while the request was open.
    public static func http2GoAway(errorCode: String) -> PinnedTransportError { .init(.http2GoAway(errorCode: errorCode)) }

    /// Which cause this is.
    public var code: Code {
        switch backing {
        case .responseTooLarge: .responseTooLarge
        case .bufferedBodyBudgetExceeded: .bufferedBodyBudgetExceeded
        case .responseHeadTooLarge: .responseHeadTooLarge
        case .tooManyInformationalResponses: .tooManyInformationalResponses
        case .http2ContinuationFlood: .http2ContinuationFlood
        case .http2ControlFrameFlood: .http2ControlFrameFlood
        case .http2PushRefused: .http2PushRefused
        case .http2ProtocolViolation: .http2ProtocolViolation
        case .http2GoAway: .http2GoAway
        }
    }

    /// The bound that was passed, in bytes or responses (the budget for
    /// ``bufferedBodyBudgetExceeded(budget:)``); nil for the causes without one.
    public var limit: Int? {
        switch backing {
        case .responseTooLarge(let limit), .bufferedBodyBudgetExceeded(let limit), .responseHeadTooLarge(let limit),
             .tooManyInformationalResponses(let limit): limit
        default: nil
        }
    }

    /// swift-nio-http2's words for ``http2ProtocolViolation(_:)``, the GOAWAY error code for
    /// ``http2GoAway(errorCode:)``; nil for the other causes.
    public var detail: String? {
        switch backing {
        case .http2ProtocolViolation(let detail), .http2GoAway(let detail): detail
        default: nil
        }
    }

    /// Whether `error` is of the kind `code`, whatever it carries (`case .responseTooLarge:`).
    public static func ~= (code: Code, error: PinnedTransportError) -> Bool { error.code == code }

    /// The cause in a sentence, for a log line or an error message.
    public var description: String {
        switch backing {
        case .responseTooLarge(let limit):
            "The response body is larger than \(limit) bytes, the most a pinned session buffers for one completion handler; use a delegate-based data task to receive it in pieces."
        case .bufferedBodyBudgetExceeded(let budget):
            "The response bodies buffered for completion handlers would pass the session's budget of \(budget) bytes (PinnedTransportLimits.bufferedBodyBudget); use a delegate-based data task to receive large bodies in pieces."
        case .responseHeadTooLarge(let limit):
            "The server sent a response head (status line, headers and informational responses) larger than \(limit) bytes."
        case .tooManyInformationalResponses(let limit):
            "The server sent more than \(limit) informational (1xx) responses before the final one."
        case .http2ContinuationFlood:
            "The server split a header block over more HTTP/2 CONTINUATION frames than allowed."
        case .http2ControlFrameFlood:
            "The server flooded the HTTP/2 connection with control frames (PING, SETTINGS) or did not read their answers."
        case .http2PushRefused:
            "The server pushed a stream (PUSH_PROMISE) although the client disabled server push."
        case .http2ProtocolViolation(let detail):
            "The server violated the HTTP/2 protocol: \(detail)"
        case .http2GoAway(let code):
            "The server ended the HTTP/2 connection with an error (GOAWAY, \(code)) before the response was complete."
        }
    }
}
