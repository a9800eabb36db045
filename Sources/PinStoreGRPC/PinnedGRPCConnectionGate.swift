import Foundation
import GRPCCore
import NIOCore
import NIOSSL
import NIOTLS
import PinStore

/// Sits between TLS and gRPC's HTTP/2 handlers on a pinned connection.
///
/// - A handshake the pin check refused reaches gRPC as an `RPCError` saying "refused by PinStore"
///   and why, caused by the `PinningFailure` (swift-nio-ssl only says the handshake failed), so
///   the RPCs that waited for the connection fail with it (``refusalError(_:)``).
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

    /// The verifier's decision for this connection's handshake and what it admitted the
    /// connection with, recorded by its `onAdmission` (on the event loop, or on a concurrency
    /// thread after an update) before the handshake goes on.
    final class Decision: Sendable {
        private let value = Locked<(decision: PinningDecision, evidence: AdmissionGate.Evidence?)?>(nil)
        func record(_ decision: PinningDecision, evidence: AdmissionGate.Evidence?) { value.withLock { $0 = (decision, evidence) } }
        var recorded: PinningDecision? { value.withLock { $0?.decision } }
        /// The evidence of an allowed decision; nil before one, or for a refusal.
        var admission: AdmissionGate.Evidence? { value.withLock { $0.flatMap { $0.decision.isAllowed ? $0.evidence : nil } } }
    }

    private let connections: PinnedGRPCConnections
    private let decision: Decision
    /// The list generation read before the handshake began.
    private let generationBeforeHandshake: UInt64
    /// The admission the write path asks, once the handshake completed (the contract every
    /// adapter that keeps connections shares: ``AdmissionGate``).
    private var gate: AdmissionGate?
    private var refusal: RPCError?
    private var context: ChannelHandlerContext?

    init(connections: PinnedGRPCConnections, decision: Decision, generation: UInt64) {
        self.connections = connections
        self.decision = decision
        self.generationBeforeHandshake = generation
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
        if gate == nil, error is NIOSSLError, let failure = decision.recorded?.failure {
            let refused = Self.refusalError(failure)
            refusal = refused
            context.fireErrorCaught(refused)
            return
        }
        context.fireErrorCaught(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent {
            guard let evidence = decision.admission else {
                // Cannot happen: the verifier records its decision before the handshake goes
                // on, and admits only a validated chain. Never let an undecided connection on.
                refuse(PinningFailure(host: connections.serverName.host, reason: .pinMismatch), context: context)
                return
            }
            gate = AdmissionGate(evidence: evidence, admittedUnder: generationBeforeHandshake)
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            connections.admit(.init(channel: context.channel, evidence: evidence, retire: { failure in
                eventLoop.execute { loopBound.value.retire(failure) }
            }))
            // A list installed during the handshake: its re-check may have run before the
            // connection was admitted.
            if !admitsWrite(context: context) { return }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if refusal == nil, gate != nil {
            // RPCs on a kept connection make no pin check: keep the store on its schedule.
            connections.store.noteUse()
            _ = admitsWrite(context: context)
        }
        if let refusal {
            promise?.fail(refusal)
            return
        }
        // Before the handshake, writes (the HTTP/2 preface) wait in the TLS handler, which
        // sends them only once the verifier admitted the server.
        context.write(data, promise: promise)
    }

    /// Asks the gate (one compare while the list holds still; the pin decision again once it
    /// changed); closes the connection and returns false when the list in force refuses it.
    private func admitsWrite(context: ChannelHandlerContext) -> Bool {
        guard var gate else { return refusal == nil }
        let verdict = connections.store.admit(&gate).verdict
        self.gate = gate
        guard verdict == .admit else {
            // The reason a new connection would be refused with; a list that would not hold
            // still for eight re-checks has none, and is refused as a mismatch.
            let failure = connections.store.refusal(of: gate.evidence)
                ?? PinningFailure(host: connections.serverName.host, reason: .pinMismatch)
            refuse(failure, context: context)
            return false
        }
        return true
    }

    /// Retires the connection after a list change (``PinnedGRPCConnections/listChanged()``).
    private func retire(_ failure: PinningFailure) {
        guard refusal == nil, let context else { return }
        gate?.refuse()
        refuse(failure, context: context)
    }

    /// Closes the connection, with `failure` as the reason gRPC gives the RPCs it ends.
    private func refuse(_ failure: PinningFailure, context: ChannelHandlerContext) {
        let refused = Self.refusalError(failure)
        refusal = refused
        context.fireErrorCaught(refused)
        context.close(promise: nil)
    }

    /// The error a refused connection ends with, as gRPC will surface it.
    ///
    /// gRPC words every connection that ends before its HTTP/2 preface as the server's doing
    /// ("The server accepted the TCP connection but closed the connection before completing the
    /// HTTP/2 connection preface.") and one that ends later as dropped; the client refused, and
    /// the reader of that error must learn so and why without digging. An `RPCError` with the
    /// same code (`.unavailable`) is merged by gRPC into the one it makes: our message is
    /// appended to its own, and our cause, the `PinningFailure`, becomes its cause (so
    /// `PinningFailure(unwrapping:)` finds it one level down). A plain error would only appear
    /// inside gRPC's "(cause: ...)".
    static func refusalError(_ failure: PinningFailure) -> RPCError {
        RPCError(code: .unavailable,
                 message: "refused by PinStore (the client ended the connection; the server did not close it): \(failure.summary)",
                 cause: failure)
    }
}
