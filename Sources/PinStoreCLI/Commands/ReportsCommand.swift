import ArgumentParser
import Foundation
import PinStore
import PinStoreDevServer

/// `pinstore reports`: a pin-failure report collector on 127.0.0.1.
struct ReportsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reports",
        abstract: "Collect pin-failure reports on 127.0.0.1, one file per report.",
        discussion: """
            Accepts the reports PinStore sends to its configured reportURI (JSON, POSTed to any \
            path) and writes each, unchanged, to a new file report-<UTC time>-<n>-<random>.json \
            in DIR. Bodies that are not JSON objects are refused (400), other methods too (405).

            Keeps at most --max-files report files taking at most --max-bytes together: after \
            each report, the oldest files in DIR go until both hold (the newest stays), so a \
            host failing pinning in a loop cannot fill the disk.

            Listens on 127.0.0.1 only; --port 0 picks a free port. Prints the URL to configure \
            as reportURI, logs each report, and runs until interrupted (Ctrl-C) or terminated.

            Example:
              pinstore reports --dir ./pin-reports --port 8081 --max-files 500
              (then: configuration.reportURI = URL(string: "http://127.0.0.1:8081/pin-reports"))
            """
    )

    @Option(help: "The directory reports are written to (created if needed).")
    var dir: String

    @Option(help: "TCP port on 127.0.0.1 (0 picks a free one).")
    var port: Int = 8081

    @Option(help: "Report files kept at most; the oldest go first.")
    var maxFiles: Int = ReportCollector.Limits().maximumFiles

    @Option(help: "Bytes of report files kept at most; the oldest go first.")
    var maxBytes: Int = ReportCollector.Limits().maximumBytes

    func validate() throws {
        guard (0...65_535).contains(port) else {
            throw ValidationError("--port \(port) is not a TCP port (0 picks a free one).")
        }
        guard maxFiles >= 1, maxBytes >= 1 else {
            throw ValidationError("--max-files and --max-bytes must be at least 1.")
        }
    }

    func run() async throws {
        let collector: ReportCollector
        do {
            collector = try ReportCollector(directory: URL(fileURLWithPath: dir),
                                            limits: .init(maximumFiles: maxFiles, maximumBytes: maxBytes))
        } catch {
            throw CLIError("cannot use \(dir) as the reports directory", error)
        }
        let logged: ListServerResponder = { request in
            let response = collector.handle(request)
            let location = response.headers.first { $0.0 == "Location" }?.1 ?? ""
            Console.print("\(request.method) \(request.uri) -> \(response.status) \(location)")
            return response
        }
        // As `serve`: watch for signals before the address is printed.
        let running = Locked<(server: ListServer?, stopRequested: Bool)>((nil, false))
        let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) {
            let server = running.withLock { state -> ListServer? in
                state.stopRequested = true
                return state.server
            }
            Task { try? await server?.shutdown() }
        }
        defer { signals.cancel() }
        let server: ListServer
        do {
            server = try await ListServer.start(port: port, responder: logged)
        } catch {
            throw CLIError("\(error)")
        }
        if running.withLock({ state -> Bool in
            state.server = server
            return state.stopRequested
        }) {
            try? await server.shutdown()
        }
        Console.print("collecting pin-failure reports into \(collector.directory.path) at \(server.baseURL.absoluteString)/pin-reports")
        Console.print("press Ctrl-C to stop")
        try? await server.waitUntilClosed()
        try? await server.shutdown()
        Console.print("stopped")
    }
}
