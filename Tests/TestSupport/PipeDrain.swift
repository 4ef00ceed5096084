import Foundation
import Glibc

/// Reads a child's pipe to its end on a thread of its own, with blocking reads: each chunk goes to
/// `onData`, and `onEnd` runs once at the end of the stream.
///
/// Not `FileHandle.readabilityHandler`: that installs a libdispatch read source, and tearing it down
/// races the descriptor's close. Under the suite's churn of child processes this crashed the whole
/// test process in libdispatch's manager thread (`_dispatch_event_loop_drain`, a dangling epoll
/// muxnote: swift-corelibs-libdispatch issue 949). A blocking read never registers the descriptor
/// with libdispatch.
public enum PipeDrain {
    public static func start(_ handle: FileHandle, onData: @escaping @Sendable (Data) -> Void,
                             onEnd: @escaping @Sendable () -> Void = {}) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                // The handle is captured, so its descriptor stays open until this loop ends.
                let count = read(handle.fileDescriptor, &buffer, buffer.count)
                if count > 0 {
                    onData(Data(buffer[..<count]))
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            onEnd()
        }
        thread.name = "pipe-drain"
        thread.start()
    }
}
