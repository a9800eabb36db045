import Foundation
import PinStore
import NIOCore
import NIOHTTP1

/// Turns decoded HTTP requests into ``ListServerRequest`` values, asks the responder, and
/// writes its answer, after its delay when it has one. One instance per connection.
final class ListServerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: ListServerResponder
    private let state: Locked<ListServerState>
    private var pendingHead: HTTPRequestHead?
    private var pendingBody = Data()
    private var bodyTooLarge = false
    /// Requests of this connection received and not yet answered to their end.
    private var unanswered = 0

    init(responder: @escaping ListServerResponder, state: Locked<ListServerState>) {
        self.responder = responder
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            unanswered += 1
            state.withLock { state in
                state.requests += 1
                state.open += 1
                state.maximumOpen = max(state.maximumOpen, state.open)
            }
            pendingHead = head
            pendingBody = Data()
            bodyTooLarge = false
        case .body(let buffer):
            // Lists are fetched with GET; POSTed bodies (pin-failure reports) are kept, bounded.
            if pendingBody.count + buffer.readableBytes > ListServerRequest.maximumBodySize {
                bodyTooLarge = true
                pendingBody = Data()
            } else if !bodyTooLarge {
                pendingBody.append(contentsOf: buffer.readableBytesView)
            }
        case .end:
            guard let head = pendingHead else { return }
            pendingHead = nil
            let request = ListServerRequest(method: head.method.rawValue, uri: head.uri,
                                            headers: head.headers.map { ($0.name, $0.value) }, body: pendingBody)
            pendingBody = Data()
            let response = bodyTooLarge
                ? ListServerResponse(status: 413, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                     body: Data("request body larger than \(ListServerRequest.maximumBodySize) bytes\n".utf8))
                : responder(request)
            if response.delay > 0 {
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                let nanoseconds = Int64(min(response.delay, 3_600) * 1_000_000_000)
                context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
                    let (handler, context) = bound.value
                    handler.write(response, for: head, context: context)
                }
            } else {
                write(response, for: head, context: context)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if unanswered > 0 {
            let count = unanswered
            unanswered = 0
            state.withLock { state in
                state.open -= count
                state.abandoned += count
            }
        }
        context.fireChannelInactive()
    }

    /// A response was written to its end.
    private func answered() {
        guard unanswered > 0 else { return }
        unanswered -= 1
        state.withLock { $0.open -= 1 }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A client that gives up (a refused TLS handshake, a reset) ends only its connection.
        context.close(promise: nil)
    }

    private func write(_ response: ListServerResponse, for request: HTTPRequestHead, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders(response.headers)
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        let keepAlive = request.isKeepAlive
        if !keepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        }
        let status = HTTPResponseStatus(statusCode: response.status)
        let head = HTTPResponseHead(version: request.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        // 1xx, 204 and 304 have no content (RFC 9110 6.4.1); NIO drops their Content-Length.
        if let interval = response.dripInterval, request.method != .HEAD, status.mayHaveResponseBody, !response.body.isEmpty {
            context.flush()
            drip(response.body, from: response.body.startIndex, every: interval, keepAlive: keepAlive, context: context)
            return
        }
        if request.method != .HEAD, status.mayHaveResponseBody, !response.body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: response.body.count)
            buffer.writeBytes(response.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        end(keepAlive: keepAlive, context: context)
    }

    /// Ends the response (and the connection, when the request asked for that).
    private func end(keepAlive: Bool, context: ChannelHandlerContext) {
        answered()
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Writes the byte of `body` at `index`, then the next one `interval` seconds later, until
    /// the body ends or the client closes the connection.
    private func drip(_ body: Data, from index: Data.Index, every interval: TimeInterval, keepAlive: Bool, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var buffer = context.channel.allocator.buffer(capacity: 1)
        buffer.writeInteger(body[index])
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let next = body.index(after: index)
        guard next < body.endIndex else {
            end(keepAlive: keepAlive, context: context)
            return
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let nanoseconds = Int64(min(max(interval, 0), 3_600) * 1_000_000_000)
        context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
            let (handler, context) = bound.value
            handler.drip(body, from: next, every: interval, keepAlive: keepAlive, context: context)
        }
    }
}
