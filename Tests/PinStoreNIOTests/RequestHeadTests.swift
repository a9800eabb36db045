#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import NIOHTTP1
import PinStore
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// The request head the pinned transport builds: its target from the URL, and every field
/// checked against HTTP's grammar as it is added (issue 33 moved both out of extra passes).
@Suite struct RequestHeadTests {
    static let settings = PinnedHTTPSTransport.SessionSettings(URLSessionConfiguration.ephemeral)

    static func head(_ request: URLRequest) throws -> HTTPRequestHead {
        let url = try #require(request.url)
        return try PinnedHTTPSTransport.head(for: request, url: url, target: try PinnedHTTPSTransport.target(of: url),
                                             settings: settings, bodyLength: nil)
    }

    @Test(arguments: [
        ("https://localhost:8443/small", "/small"),
        ("https://localhost", "/"),
        ("https://localhost?x=1", "/?x=1"),
        ("https://user:pw@host.example:444/p%20q?r=%41&s#fragment", "/p%20q?r=%41&s"),
        ("https://host.example/a/../b;c", "/a/../b;c"),
        ("https://host.example/a%2Fb?", "/a%2Fb?"),
    ])
    func theTargetIsTheURLsPathAndQueryAsSentOnTheWire(url: String, uri: String) throws {
        #expect(try PinnedHTTPSTransport.target(of: #require(URL(string: url))).uri == uri)
    }

    @Test func aRelativeURLIsResolvedAgainstItsBase() throws {
        let base = try #require(URL(string: "https://base.example:444/dir/"))
        let target = try PinnedHTTPSTransport.target(of: #require(URL(string: "file?q=1", relativeTo: base)))
        #expect(target.uri == "/dir/file?q=1")
        #expect(target.hostHeader == "base.example:444")
    }

    // FoundationNetworking's URLRequest drops a value holding CR, LF or NUL by itself; other
    // control characters pass through it.
    @Test func aHeaderValueWithAControlCharacterIsRefused() throws {
        var request = URLRequest(url: try #require(URL(string: "https://localhost/")))
        request.setValue("ring\u{7}", forHTTPHeaderField: "X-Note")
        let error = #expect(throws: URLError.self) { _ = try Self.head(request) }
        #expect(error?.code == .badURL)
    }

    @Test func aHeaderNameThatIsNotATokenIsRefused() throws {
        var request = URLRequest(url: try #require(URL(string: "https://localhost/")))
        request.setValue("1", forHTTPHeaderField: "Bad Name")
        #expect(throws: URLError.self) { _ = try Self.head(request) }
    }

    @Test func aMethodThatIsNotATokenIsRefused() throws {
        var request = URLRequest(url: try #require(URL(string: "https://localhost/")))
        request.httpMethod = "GET /other HTTP/1.1\r\n"
        #expect(throws: URLError.self) { _ = try Self.head(request) }
    }

    @Test func validFieldsGoOutAsGivenWithTheHostFromTheURL() throws {
        var request = URLRequest(url: try #require(URL(string: "https://LocalHost:8443/x")))
        request.setValue("text/plain; q=0.5\twith tab", forHTTPHeaderField: "Accept")
        request.setValue("999", forHTTPHeaderField: "Content-Length")
        let head = try Self.head(request)
        #expect(head.headers["Accept"] == ["text/plain; q=0.5\twith tab"])
        #expect(head.headers["Host"] == ["localhost:8443"])
        // Framing comes from the body the request really has (none here, a GET).
        #expect(head.headers["Content-Length"].isEmpty)
    }

    @Test func aHeaderWithAControlCharacterFailsBeforeAnyConnectionIsMade() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let session = URLSession(configuration: .pinned(by: try Pins.good(), trustRoots: try Pins.anchors, basedOn: .ephemeral))
        var request = URLRequest(url: try #require(URL(string: "https://localhost:\(server.port)/hello")))
        request.setValue("ring\u{7}", forHTTPHeaderField: "X-Note")
        let error = await #expect(throws: URLError.self) { _ = try await session.data(for: request) }
        #expect(error?.code == .badURL)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }
}
#endif
