import Foundation
import PinStore
import PinStoreDevServer
import PinStoreTestSupport
import Testing

/// HTTP caching of what the development list server serves (issue 44, item 3): validators,
/// `304 Not Modified` (RFC 9110, section 13) and `Cache-Control`, over real loopback sockets
/// and URLSession.
struct ListServerCachingTests {
    /// 2026-05-28T20:26:40Z: a fixed time, so dates in these tests are exact.
    static let firstServed = Date(timeIntervalSince1970: 1_780_000_000)
    /// `firstServed` as an IMF-fixdate, as Python's `email.utils.formatdate(1780000000, usegmt=True)` writes it.
    static let firstServedHTTPDate = "Thu, 28 May 2026 20:26:40 GMT"

    static let list = Data(#"{"fingerprints":[]}"#.utf8)
    static let otherList = Data(#"{"fingerprints":[],"timestamp":1}"#.utf8)

    /// A clock the test moves by hand.
    final class ManualClock: Sendable {
        private let now: Locked<Date>

        init(_ start: Date) {
            now = Locked(start)
        }

        func set(_ date: Date) {
            now.withLock { $0 = date }
        }

        var read: @Sendable () -> Date {
            { [now] in now.withLock { $0 } }
        }
    }

    /// The static list responder on a tracker whose clock stands at ``firstServed``.
    static func fixedTimeList(_ body: Data = list) -> ListServerResponder {
        ListResponders.staticList(body, tracker: RepresentationTracker(clock: { firstServed }))
    }

    /// One GET of `path` on a fresh server answering with `responder`.
    static func get(_ responder: @escaping ListServerResponder, path: String = "list.json",
                    headers: [String: String] = [:]) async throws -> HTTPTestClient.Response {
        try await ListServerTests.withServer(responder) { server in
            try await HTTPTestClient.get(server.baseURL.appendingPathComponent(path), headers: headers)
        }
    }

    /// The strong entity tag of `body` as the server should send it, computed here from the digest.
    static func expectedETag(_ body: Data) -> String {
        "\"" + SHA256Digest.hash(body).map { String(format: "%02x", $0) }.joined() + "\""
    }

    // MARK: What a 200 carries

    @Test func staticListETagIsTheQuotedSHA256OfItsBytes() async throws {
        let response = try await Self.get(ListResponders.staticList(Self.list))
        #expect(response.status == 200)
        #expect(response.header("ETag") == Self.expectedETag(Self.list))
    }

    @Test func staticListLastModifiedIsTheIMFFixdateOfWhenItWasFirstServed() async throws {
        let clock = ManualClock(Self.firstServed.addingTimeInterval(0.75))   // rounded down to the second
        let response = try await Self.get(ListResponders.staticList(Self.list, tracker: RepresentationTracker(clock: clock.read)))
        #expect(response.header("Last-Modified") == Self.firstServedHTTPDate)
    }

    /// Dates around leap days and a century that is not a leap year, against
    /// `email.utils.formatdate(seconds, usegmt=True)` of Python 3.
    @Test(arguments: zip([1_835_481_599, 4_107_542_400, 946_641_600], [
        "Tue, 29 Feb 2028 23:59:59 GMT",
        "Mon, 01 Mar 2100 00:00:00 GMT",
        "Fri, 31 Dec 1999 12:00:00 GMT",
    ]))
    func lastModifiedIsTheIMFFixdateAnIndependentFormatterWrites(seconds: Int, expected: String) async throws {
        let served = Date(timeIntervalSince1970: TimeInterval(seconds))
        let response = try await Self.get(ListResponders.staticList(Self.list, tracker: RepresentationTracker(clock: { served })))
        #expect(response.header("Last-Modified") == expected)
    }

    @Test func staticListCacheControlLetsACDNKeepItForAMinuteAndRevalidate() async throws {
        let response = try await Self.get(ListResponders.staticList(Self.list))
        #expect(response.header("Cache-Control") == "public, max-age=60, must-revalidate")
    }

    // MARK: If-None-Match

    @Test func matchingIfNoneMatchIsAnswered304WithoutABody() async throws {
        let response = try await Self.get(ListResponders.staticList(Self.list), headers: ["If-None-Match": Self.expectedETag(Self.list)])
        #expect(response.status == 304)
        #expect(response.body.isEmpty)
    }

    @Test func notModifiedCarriesTheETagLastModifiedAndCacheControlOfThe200() async throws {
        let response = try await Self.get(Self.fixedTimeList(), headers: ["If-None-Match": Self.expectedETag(Self.list)])
        #expect(response.status == 304)
        #expect(response.header("ETag") == Self.expectedETag(Self.list))
        #expect(response.header("Last-Modified") == Self.firstServedHTTPDate)
        #expect(response.header("Cache-Control") == ListResponders.cacheableCacheControl)
    }

    @Test func ifNoneMatchStarIsAnswered304() async throws {
        let response = try await Self.get(ListResponders.staticList(Self.list), headers: ["If-None-Match": "*"])
        #expect(response.status == 304)
    }

    @Test func ifNoneMatchListNamingTheETagIsAnswered304() async throws {
        let header = #""older", W/"other" ,, "# + Self.expectedETag(Self.list) + #" , "newer""#
        let response = try await Self.get(ListResponders.staticList(Self.list), headers: ["If-None-Match": header])
        #expect(response.status == 304)
    }

    @Test func weakIfNoneMatchMatchesTheStrongETag() async throws {
        let response = try await Self.get(ListResponders.staticList(Self.list), headers: ["If-None-Match": "W/" + Self.expectedETag(Self.list)])
        #expect(response.status == 304)
    }

    @Test func ifNoneMatchNamingOtherBytesGetsTheList() async throws {
        let response = try await Self.get(ListResponders.staticList(Self.list), headers: ["If-None-Match": Self.expectedETag(Self.otherList)])
        #expect(response.status == 200)
        #expect(response.body == Self.list)
    }

    @Test(arguments: [
        "unquoted",          // no quotes: not an entity tag
        "\"open",            // no closing quote
        "w/\"tag\"",         // the weak prefix is a capital W
        "\"a\" \"b\"",       // two tags without a comma
        "*, \"tag\"",        // `*` stands alone
    ])
    func malformedIfNoneMatchGetsTheList(header: String) async throws {
        // Each value also names the current tag, after the malformed part, so only reading the
        // whole field as one condition that fails keeps the 304 away.
        let response = try await Self.get(ListResponders.staticList(Self.list),
                                          headers: ["If-None-Match": header + ", " + Self.expectedETag(Self.list)])
        #expect(response.status == 200)
        #expect(response.body == Self.list)
    }

    @Test func ifNoneMatchLongerThanTheBoundGetsTheList() async throws {
        // Valid tags up to just past the bound, then the current one.
        let filler = Array(repeating: "\"" + String(repeating: "f", count: 62) + "\"",
                           count: IfNoneMatch.maximumFieldLength / 66 + 1).joined(separator: ", ")
        let response = try await Self.get(ListResponders.staticList(Self.list),
                                          headers: ["If-None-Match": filler + ", " + Self.expectedETag(Self.list)])
        #expect(response.status == 200)
    }

    @Test func ifNoneMatchDecidesAloneWhenIfModifiedSinceIsPresentToo() async throws {
        let response = try await Self.get(Self.fixedTimeList(), headers: [
            "If-None-Match": Self.expectedETag(Self.otherList),
            "If-Modified-Since": Self.firstServedHTTPDate,
        ])
        #expect(response.status == 200)
    }

    // MARK: If-Modified-Since

    @Test func ifModifiedSinceAtLastModifiedIsAnswered304() async throws {
        let response = try await Self.get(Self.fixedTimeList(), headers: ["If-Modified-Since": Self.firstServedHTTPDate])
        #expect(response.status == 304)
        #expect(response.body.isEmpty)
    }

    @Test func ifModifiedSinceBeforeLastModifiedGetsTheList() async throws {
        let response = try await Self.get(Self.fixedTimeList(), headers: ["If-Modified-Since": "Thu, 28 May 2026 20:26:39 GMT"])
        #expect(response.status == 200)
        #expect(response.body == Self.list)
    }

    /// The two obsolete forms RFC 9110 has recipients accept, for a date after Last-Modified.
    @Test(arguments: ["Sunday, 05-Jul-26 00:00:00 GMT", "Sun Jul  5 00:00:00 2026"])
    func ifModifiedSinceInAnObsoleteDateFormIsRead(header: String) async throws {
        let clock = ManualClock(Self.firstServed)
        let tracker = RepresentationTracker(clock: clock.read)
        let status = try await ListServerTests.withServer(ListResponders.staticList(Self.list, tracker: tracker)) { server in
            let url = server.baseURL.appendingPathComponent("list.json")
            _ = try await HTTPTestClient.get(url)                            // first served: Last-Modified 28 May
            clock.set(Date(timeIntervalSince1970: 1_783_888_000))            // 12 July 2026
            return try await HTTPTestClient.get(url, headers: ["If-Modified-Since": header]).status
        }
        #expect(status == 304)
    }

    @Test(arguments: [
        "yesterday",
        "Thu, 28 May 2026 20:26:40 UTC",    // HTTP dates are in GMT, and say so
        "Thu, 28 May 2026 20:26:40 GMT, Thu, 28 May 2026 20:26:40 GMT",   // two members
    ])
    func unparsableIfModifiedSinceIsIgnored(header: String) async throws {
        let response = try await Self.get(Self.fixedTimeList(), headers: ["If-Modified-Since": header])
        #expect(response.status == 200)
    }

    @Test func ifModifiedSinceWithADayTheMonthDoesNotHaveIsIgnored() async throws {
        let clock = ManualClock(Self.firstServed)
        let tracker = RepresentationTracker(clock: clock.read)
        let status = try await ListServerTests.withServer(ListResponders.staticList(Self.list, tracker: tracker)) { server in
            let url = server.baseURL.appendingPathComponent("list.json")
            _ = try await HTTPTestClient.get(url)                            // Last-Modified 28 May
            clock.set(Date(timeIntervalSince1970: 1_783_888_000))            // 12 July 2026
            // 31 June read leniently would be 1 July: after Last-Modified, before now.
            return try await HTTPTestClient.get(url, headers: ["If-Modified-Since": "Wed, 31 Jun 2026 00:00:00 GMT"]).status
        }
        #expect(status == 200)
    }

    @Test func ifModifiedSinceLaterThanTheServersClockIsIgnored() async throws {
        let response = try await Self.get(Self.fixedTimeList(), headers: ["If-Modified-Since": "Fri, 31 Dec 2099 23:59:59 GMT"])
        #expect(response.status == 200)
    }

    @Test func ifModifiedSinceIsNotTrustedAfterTheBytesChangedTwiceInOneSecond() async throws {
        let tracker = RepresentationTracker(clock: { Self.firstServed })
        let serving = Locked(Self.list)
        let responder: ListServerResponder = { request in
            ListResponders.staticList(serving.withLock { $0 }, tracker: tracker)(request)
        }
        let (first, second) = try await ListServerTests.withServer(responder) { server in
            let url = server.baseURL.appendingPathComponent("list.json")
            let first = try await HTTPTestClient.get(url)
            serving.withLock { $0 = Self.otherList }   // new bytes within the same second
            return (first, try await HTTPTestClient.get(url, headers: ["If-Modified-Since": Self.firstServedHTTPDate]))
        }
        // Both versions carry the same date; a client holding the first must get the second.
        #expect(first.header("Last-Modified") == second.header("Last-Modified"))
        #expect(second.status == 200)
        #expect(second.body == Self.otherList)
    }

    // MARK: Challenge mode

    static func challengeList() throws -> ListServerResponder {
        ListResponders.challengeList(body: list, signingKey: try ListServerTests.signingKey())
    }

    @Test func challengeModeIsNeverAnswered304() async throws {
        let response = try await Self.get(try Self.challengeList(), headers: [
            "X-Cert-Pinning-Challenge": ListServerTests.challenge,
            "If-None-Match": "*",
            "If-Modified-Since": "Fri, 31 Dec 2099 23:59:59 GMT",
        ])
        #expect(response.status == 200)
        #expect(response.header("X-Cert-Pinning-Signature") != nil)
    }

    @Test func challengeModeResponsesAreNotStoredAndCarryNoValidators() async throws {
        let response = try await Self.get(try Self.challengeList(), headers: ["X-Cert-Pinning-Challenge": ListServerTests.challenge])
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.header("ETag") == nil)
        #expect(response.header("Last-Modified") == nil)
    }

    @Test func challengeModeRefusalsAreNotStored() async throws {
        let response = try await Self.get(try Self.challengeList())
        #expect(response.status == 400)
        #expect(response.header("Cache-Control") == "no-store")
    }

    // MARK: Key documents

    static func withKeyDocuments(_ documents: Locked<Data>) -> ListServerResponder {
        ListResponders.withKeyDocuments({ documents.withLock { $0 } }, list: ListResponders.staticList(list))
    }

    @Test func keyDocumentsCarryTheETagOfTheirBytesAndTheListCacheControl() async throws {
        let documents = Data(#"{"keyDocuments":[]}"#.utf8)
        let response = try await Self.get(Self.withKeyDocuments(Locked(documents)), path: "keys.json")
        #expect(response.body == documents)
        #expect(response.header("ETag") == Self.expectedETag(documents))
        #expect(response.header("Cache-Control") == ListResponders.cacheableCacheControl)
    }

    @Test func keyDocumentsMatchingIfNoneMatchAreAnswered304() async throws {
        let documents = Data(#"{"keyDocuments":[]}"#.utf8)
        let response = try await Self.get(Self.withKeyDocuments(Locked(documents)), path: "keys.json",
                                          headers: ["If-None-Match": Self.expectedETag(documents)])
        #expect(response.status == 304)
    }

    @Test func keyDocumentsReplacedOnDiskAreServedWithTheirNewETag() async throws {
        let documents = Locked(Data(#"{"keyDocuments":[]}"#.utf8))
        let replacement = Data(#"{"keyDocuments":[{}]}"#.utf8)
        let response = try await ListServerTests.withServer(Self.withKeyDocuments(documents)) { server in
            let url = server.baseURL.appendingPathComponent("keys.json")
            let first = try await HTTPTestClient.get(url)
            documents.withLock { $0 = replacement }
            return try await HTTPTestClient.get(url, headers: ["If-None-Match": try #require(first.header("ETag"))])
        }
        #expect(response.status == 200)
        #expect(response.body == replacement)
        #expect(response.header("ETag") == Self.expectedETag(replacement))
    }
}
