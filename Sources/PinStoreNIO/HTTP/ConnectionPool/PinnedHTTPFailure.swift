import NIOCore
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
    /// The response is larger than what may be buffered for this request.
    case responseTooLarge(Int)
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
        case is NIOConnectionError, is IOError:
            return .cannotConnect(String(describing: error))
        default:
            return .connectionLost(String(describing: error))
        }
    }
}
