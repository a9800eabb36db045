// The child process of the crash drill (PinStoreCLITests/CrashDrillTests): forced list updates
// in a loop, as fast as the loopback server answers, until the test kills it with SIGKILL.
//
//   PinStoreCrashDrillChild <storage-directory> <list-url> <public-key>
//
// With a fifth argument N, it calls exit(0) after N milliseconds instead, while updates (and
// their signature verifications) run on other threads: exiting must never crash.
import Foundation
import PinStore

let arguments = CommandLine.arguments
guard arguments.count == 4 || arguments.count == 5, let url = URL(string: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: PinStoreCrashDrillChild <storage-directory> <list-url> <public-key>\n".utf8))
    exit(2)
}
let store: PinStore
do {
    store = try PinStore(configuration: .init(serviceURL: url, publicKey: arguments[3], identifier: "drill",
                                              storageDirectory: URL(fileURLWithPath: arguments[1])))
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data("ready\n".utf8))
if arguments.count == 5, let milliseconds = UInt32(arguments[4]) {
    for _ in 0..<2 {
        Task.detached { while true { _ = await store.update(mode: .forced) } }
    }
    usleep(milliseconds * 1000)
    exit(0)
}
while true {
    let result = await store.update(mode: .forced)
    if result != .ok {
        FileHandle.standardError.write(Data("update: \(result)\n".utf8))
    }
}
