import Foundation
import NIOCore
import NIOSSL
import NIOTLS
import PinStore

/// Sits between TLS and gRPC's HTTP/2 handlers on a pinned connection.
///
/// - A handshake the pin check refused reaches gRPC as the `PinningFailure` itself (swift-nio-ssl
///   only says the handshake failed), so the RPCs that waited for the connection fail with it.
/// - A completed handshake is admitted with the chain the verifier validated; a handshake that
///   completed without a recorded admission (which the verifier never allows) is closed.
/// - When the list has changed since the connection was checked, a write is let through only
///   after the chain is checked again: a connection whose pin was withdrawn never carries
///   another RPC byte, even one written in the moment before ``PinnedGRPCConnections/listChanged()``
///   closed it.
@available(macOS 15.0, *)
final class PinnedGRPCConnectionGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    /// The verifier's decision for this connection's handshake, recorded by its `onDecision`
    /// (on the event loop, or on a concurrency thread after an update) before the handshake
    /// goes on.
    final class Decision: Sendable {
        private let value = Locked<PinningDecision?>(nil)
        func record(_ decision: PinningDecision) { value.withLock { $0 = decision } }
        var recorded: PinningDecision? { value.withLock { $0 } }
    }

    private let connections: PinnedGRPCConnections
    private let decision: Decision
    /// The list generation the chain was last found admitted under.
    private var generation: UInt64
    /// The chain the verifier validated, once the handshake completed.
    private var validatedChain: [Data]?
    private var refusal: PinningFailure?
    private var context: ChannelHandlerContext?

    init(connections: PinnedGRPCConnections, decision: Decision, generation: UInt64) {
        self.connections = connections
        self.decision = decision
        self.generation = generation
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The verifier's refusal fails the handshake with swift-nio-ssl's generic error: hand
        // gRPC the reason instead.
        if validatedChain == nil, error is NIOSSLError, let failure = decision.recorded?.failure {
            refusal = failure
            context.fireErrorCaught(failure)
            return
        }
        context.fireErrorCaught(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent {
            guard let chain = decision.recorded?.validatedChain else {
                // Cannot happen: the verifier records its decision before the handshake goes
                // on, and admits only a validated chain. Never let an undecided connection on.
                refuse(PinningFailure(host: connections.serverName.host, reason: .pinMismatch), context: context)
                return
            }
            validatedChain = chain
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            connections.admit(.init(channel: context.channel, validatedChain: chain, retire: { failure in
                eventLoop.execute { loopBound.value.retire(failure) }
            }))
            // A list installed during the handshake: its re-check may have run before the
            // connection was admitted.
            if recheckIfListChanged() != nil { return }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if refusal == nil, validatedChain != nil {
            // RPCs on a kept connection make no pin check: keep the store on its schedule.
            connections.store.noteUse()
            recheckIfListChanged()
        }
        if let refusal {
            promise?.fail(refusal)
            return
        }
        // Before the handshake, writes (the HTTP/2 preface) wait in the TLS handler, which
        // sends them only once the verifier admitted the server.
        context.write(data, promise: promise)
    }

    /// Checks the chain again when the list changed since it was last admitted; closes the
    /// connection and returns the failure when the list in force no longer admits it.
    @discardableResult
    private func recheckIfListChanged() -> PinningFailure? {
        guard let chain = validatedChain, let context else { return nil }
        let current = connections.store.listGeneration
        guard current != generation else { return nil }
        if let failure = connections.refusal(of: chain) {
            refuse(failure, context: context)
            return failure
        }
        generation = current
        return nil
    }

    /// Retires the connection after a list change (``PinnedGRPCConnections/listChanged()``).
    private func retire(_ failure: PinningFailure) {
        guard refusal == nil, let context else { return }
        refuse(failure, context: context)
    }

    /// Closes the connection, with `failure` as the reason gRPC gives the RPCs it ends.
    private func refuse(_ failure: PinningFailure, context: ChannelHandlerContext) {
        refusal = failure
        context.fireErrorCaught(failure)
        context.close(promise: nil)
    }
}
