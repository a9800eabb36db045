import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import PinStore

/// Why a pinned request failed, in the terms a caller can act on; the transport maps each case
/// to a `URLError`.
enum PinnedHTTPFailure: Error, Sendable {
    /// The pin check (or the normal trust evaluation before it) refused the server.
    case pinning(PinningFailure)
    case timedOut
    case cancelled
    case cannotConnect(String)
    case tls(String)
    /// The connection ended before the response was complete.
    case connectionLost(String)
    /// The server went past one of the transport's bounds, or broke the protocol in a way that
    /// ends the connection (HTTP/2 connection errors).
    case misbehaving(PinnedTransportError)
    /// The response could not be decoded (bad framing, bad content encoding).
    case badResponse(String)
    case setup(String)

    /// `error` as a failure; a recorded pin refusal wins over whatever error swift-nio-ssl
    /// surfaced for the failed handshake.
    static func classify(_ error: any Error, decision: PinningDecision?) -> PinnedHTTPFailure {
        if case .deny(let failure)? = decision { return .pinning(failure) }
        switch error {
        case let failure as PinnedHTTPFailure:
            return failure
        case ChannelError.connectTimeout:
            return .timedOut
        case let error as NIOSSLError:
            return .tls(String(describing: error))
        case let error as PinningTLSSetupError:
            return .setup(error.description)
        case HTTPParserError.headerOverflow:
            return .misbehaving(.responseHeadTooLarge(limit: PinnedTransportLimits.maximumResponseHeadSize))
        case is NIOConnectionError, is IOError:
            return .cannotConnect(String(describing: error))
        default:
            if let cause = PinnedTransportError(http2Error: error) { return .misbehaving(cause) }
            return .connectionLost(String(describing: error))
        }
    }
}


extension PinnedTransportError {
    /// Whether `error` is one of swift-nio-http2's connection errors, which end the whole
    /// connection (it reports stream errors, which end one stream, the same way).
    static func isHTTP2ConnectionError(_ error: any Error) -> Bool {
        switch error {
        case is NIOHTTP2Errors.ExcessiveContinuationFrames, is NIOHTTP2Errors.ExcessivelyLargeHeaderBlock,
             is NIOHTTP2Errors.ExcessiveControlFrames, is NIOHTTP2Errors.ExcessiveOutboundFrameBuffering,
             is NIOHTTP2Errors.ExcessiveRSTFrames, is NIOHTTP2Errors.ExcessiveEmptyDataFrames,
             is NIOHTTP2Errors.ExcessiveNumberOfGlitches, is NIOHTTP2Errors.ExcessiveStreamErrors,
             is NIOHTTP2Errors.PushInViolationOfSetting, is NIOHTTP2Errors.InvalidFlowControlWindowSize,
             is NIOHTTP2Errors.InvalidWindowIncrementSize, is NIOHTTP2Errors.FlowControlViolation,
             is NIOHTTP2Errors.UnableToParseFrame, is NIOHTTP2Errors.MissingPreface,
             is NIOHTTP2Errors.ReceivedBadSettings, is NIOHTTP2Errors.InvalidSetting,
             is NIOHTTP2Errors.StreamIDTooSmall, is NIOHTTP2Errors.InvalidStreamIDForPeer,
             is NIOHTTP2Errors.RaisedGoawayLastStreamID:
            return true
        default:
            return false
        }
    }

    /// The cause named by an error of swift-nio-http2, or nil when `error` is none.
    init?(http2Error error: any Error) {
        switch error {
        case is NIOHTTP2Errors.ExcessiveContinuationFrames:
            self = .http2ContinuationFlood
        case is NIOHTTP2Errors.ExcessivelyLargeHeaderBlock:
            self = .responseHeadTooLarge(limit: PinnedTransportLimits.maximumResponseHeadSize)
        case is NIOHTTP2Errors.ExcessiveControlFrames, is NIOHTTP2Errors.ExcessiveOutboundFrameBuffering:
            self = .http2ControlFrameFlood
        case is NIOHTTP2Errors.PushInViolationOfSetting:
            self = .http2PushRefused
        case let error as any NIOHTTP2Error:
            self = .http2ProtocolViolation(String(describing: error))
        default:
            return nil
        }
    }
}
