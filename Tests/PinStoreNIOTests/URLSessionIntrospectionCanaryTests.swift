#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreTestSupport
import Testing
@testable import PinStoreNIO

/// The canary for the pinned session's reads of FoundationNetworking's private fields
/// (`URLSessionTaskIntrospection`): on the toolchain in use, every field is found for every
/// kind of task the pinned session runs. If one of these fails, corelibs moved a field: the
/// pinned session now refuses such tasks (a `URLError` and an error log) until PinStore follows.
@Suite(.serialized) struct URLSessionIntrospectionCanaryTests {
    static func session(delegate: (any URLSessionDelegate)? = nil) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [IntrospectingProtocol.self]
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    static func url(_ name: String) -> URL { URL(string: "https://\(name).introspection.test/")! }

    @Test func aCompletionHandlerDataTaskIsReadCompletely() async throws {
        _ = try await Self.session().data(from: Self.url("completion"))
        let found = try IntrospectingProtocol.result(for: "completion").get()
        #expect(!found.reportsToSessionDelegate)
        #expect(found.uploadBody == nil)
    }

    @Test func aDelegateDataTaskIsReadAsReportingToTheDelegate() async throws {
        let delegate = Finished()
        Self.session(delegate: delegate).dataTask(with: Self.url("delegate")).resume()
        try await delegate.wait()
        #expect(try IntrospectingProtocol.result(for: "delegate").get().reportsToSessionDelegate)
    }

    @Test func aCompletionHandlerTaskOnASessionWithADelegateIsNotReadAsStreaming() async throws {
        _ = try await Self.session(delegate: Finished()).data(from: Self.url("mixed"))
        #expect(try !IntrospectingProtocol.result(for: "mixed").get().reportsToSessionDelegate)
    }

    @Test func anUploadTaskFromDataHasItsBodyFound() async throws {
        var request = URLRequest(url: Self.url("upload-data"))
        request.httpMethod = "POST"
        _ = try await Self.session().upload(for: request, from: Data("body".utf8))
        guard case .data(let body)? = try IntrospectingProtocol.result(for: "upload-data").get().uploadBody else {
            Issue.record("the upload body was not found")
            return
        }
        #expect(body == Data("body".utf8))
    }

    @Test func anUploadTaskFromAFileHasItsFileFound() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("introspection-\(UUID().uuidString)")
        try Data("body".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var request = URLRequest(url: Self.url("upload-file"))
        request.httpMethod = "POST"
        _ = try await Self.session().upload(for: request, fromFile: file)
        guard case .file(let url)? = try IntrospectingProtocol.result(for: "upload-file").get().uploadBody else {
            Issue.record("the upload file was not found")
            return
        }
        #expect(url.standardizedFileURL == file.standardizedFileURL)
    }

    @Test func aFieldThatIsNotFoundIsAnErrorNamingIt() async throws {
        var fields = URLSessionTaskIntrospection.Fields.corelibs
        fields.workQueue = "workQueueOfAnotherRelease"
        IntrospectingProtocol.fields.withLock { $0["renamed"] = fields }
        _ = try await Self.session().data(from: Self.url("renamed"))
        let result = try IntrospectingProtocol.result(for: "renamed")
        guard case .failure(let error) = result else {
            Issue.record("expected the renamed field to be missing")
            return
        }
        #expect(error.field == "URLSessionTask.workQueueOfAnotherRelease")
        #expect(error.description.contains("refuses the task"))
    }

    @Test func aNilTaskIsAnError() {
        #expect(throws: URLSessionIntrospectionError.self) { _ = try URLSessionTaskIntrospection(task: nil) }
    }

    @Test func aFieldThatHoldsNoObjectIsRefused() async throws {
        var fields = URLSessionTaskIntrospection.Fields.corelibs
        // An Int: found by the runtime, but not a reference the session could be read from.
        fields.workQueue = "taskIdentifier"
        IntrospectingProtocol.fields.withLock { $0["value-field"] = fields }
        _ = try await Self.session().data(from: Self.url("value-field"))
        guard case .failure(let error) = try IntrospectingProtocol.result(for: "value-field") else {
            Issue.record("expected a field holding an Int to be refused")
            return
        }
        #expect(error.field == "URLSessionTask.taskIdentifier")
    }

    @Test func aStrongReferenceIsReadAtItsOffsetOnEveryObjectOfTheClass() throws {
        let first = Holder()
        let second = Holder()
        #expect(try ObjectField.read("queue", of: first, in: "Holder") === first.queue)
        #expect(try ObjectField.read("queue", of: second, in: "Holder") === second.queue)
        // Found on an object that holds one, then read as empty on one that holds none.
        first.optional = DispatchQueue(label: "optional")
        #expect(try ObjectField.read("optional", of: first, in: "Holder") === first.optional)
        #expect(try ObjectField.read("optional", of: second, in: "Holder") == nil)
    }

    @Test func aWeakReferenceIsRefusedRatherThanReadAsAStrongOne() {
        let holder = Holder()
        let target = DispatchQueue(label: "weakly held")
        holder.weakQueue = target
        #expect(throws: URLSessionIntrospectionError.self) { _ = try ObjectField.locate("weakQueue", in: holder, owner: "Holder") }
        withExtendedLifetime(target) {}
    }
}

/// Stored properties of each kind ``ObjectField`` meets or must refuse.
private final class Holder {
    let number = 7
    let queue = DispatchQueue(label: "held")
    var optional: DispatchQueue?
    weak var weakQueue: DispatchQueue?
}

/// Reads the introspection in `startLoading` (on the task's work queue, as the pinned protocol
/// does), records it by host label, and answers 200 with an empty body.
private final class IntrospectingProtocol: URLProtocol {
    static let results = Locked<[String: Result<URLSessionTaskIntrospection, URLSessionIntrospectionError>]>([:])
    static let fields = Locked<[String: URLSessionTaskIntrospection.Fields]>([:])

    static func result(for label: String) throws -> Result<URLSessionTaskIntrospection, URLSessionIntrospectionError> {
        try #require(results.withLock { $0[label] })
    }

    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let label = url.host?.split(separator: ".").first.map(String.init) else { return }
        let fields = Self.fields.withLock { $0[label] } ?? .corelibs
        let result = Result { () throws(URLSessionIntrospectionError) in try URLSessionTaskIntrospection(task: task, fields: fields) }
        Self.results.withLock { $0[label] = result }
        guard let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil) else { return }
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}

/// A data delegate that says when its task completed.
private final class Finished: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `done` is locked.
    private let done = Locked(false)

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        done.withLock { $0 = true }
    }

    func wait() async throws {
        _ = try await pollUntil(every: .milliseconds(20)) { done.withLock { $0 } }
        #expect(done.withLock { $0 })
    }
}
#endif
