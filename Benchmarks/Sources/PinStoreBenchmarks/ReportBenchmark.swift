import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import PinStore
import PinStoreSigning

// Issue 12, pin-failure reports: what a configured reportURI adds to a refused connection's
// decision (the report itself is built and sent off the connection's thread, but on a small
// machine that thread still shares the cores). Baseline: the same refusal by a store without a
// reportURI, measured in the same run, samples interleaved so that load drift hits every row alike.
//   swift run -c release --package-path Benchmarks reports

/// A collector that takes every report: `204 No Content`, keep-alive.
private final class ReportSink: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "0")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .noContent, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

func reportBenchmarkRows() throws -> [Row] {
    let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/pki")
    func pem(_ name: String) throws -> [X509Certificate] {
        try X509Certificate.certificates(pem: String(decoding: Data(contentsOf: fixtures.appendingPathComponent(name)), as: UTF8.self))
    }
    let attacker = try pem("attacker-chain.pem").map(\.derRepresentation)
    let anchors = TrustRoots.anchors(try pem("root-ca.pem"))
    let leaf = try pem("localhost.pem")[0]
    let key = try P256PrivateKey().publicKey.x963Representation.base64EncodedString()
    let list = try listJSON([FingerprintEntry(name: "localhost", fingerprint: leaf.fingerprint, expires: 4_102_444_799)])
    func evaluator(reportURI: URL?) throws -> PinningEvaluator {
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                                   publicKey: key, identifier: "bench", fallbackData: list,
                                                   storageDirectory: scratchDirectory())
        configuration.reportURI = reportURI
        return PinningEvaluator(store: try PinStore(configuration: configuration, fetcher: FixedFetcher(body: Data())),
                                trustRoots: anchors, updateOnEmpty: false, updateOnMismatch: false)
    }

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    let sink = try ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { child in
            child.eventLoop.makeCompletedFuture {
                try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                try child.pipeline.syncOperations.addHandler(ReportSink())
            }
        }
        .bind(host: "127.0.0.1", port: 0).wait()
    defer { try? sink.close().wait() }
    guard let sinkPort = sink.localAddress?.port else { return [] }

    let plain = try evaluator(reportURI: nil)
    let live = try evaluator(reportURI: URL(string: "http://127.0.0.1:\(sinkPort)/pin-reports")!)
    // Port 9 (discard) is closed on loopback: the first delivery fails, later failures are dropped.
    let down = try evaluator(reportURI: URL(string: "http://127.0.0.1:9/pin-reports")!)

    let decisions = 200
    var nextPort = 1_000
    func refusals(_ evaluator: PinningEvaluator, distinct: Bool) -> Double {
        Harness.nanosecondsPerOperation(operations: decisions, samples: 3) {
            for _ in 0..<decisions {
                nextPort += 1
                Harness.consume(evaluator.evaluateNow(host: "localhost", port: distinct ? nextPort : 443, presentedChain: attacker))
            }
        }
    }
    var baseline: [Double] = [], same: [Double] = [], distinctLive: [Double] = [], distinctDown: [Double] = []
    for _ in 0..<7 {
        baseline.append(refusals(plain, distinct: true))
        same.append(refusals(live, distinct: false))
        distinctLive.append(refusals(live, distinct: true))
        distinctDown.append(refusals(down, distinct: true))
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let base = median(baseline)
    func row(_ name: String, _ values: [Double]) -> Row {
        let value = median(values)
        return Row(name: name, value: Harness.format(value), baseline: "no reportURI \(Harness.format(base))",
                   ratio: String(format: "%.2fx", value / base), target: "< 1.1x", met: value / base < 1.1)
    }
    return [
        row("refused connection + report, same failure again", same),
        row("refused connection + report, distinct, collector up", distinctLive),
        row("refused connection + report, distinct, collector down", distinctDown),
    ]
}
