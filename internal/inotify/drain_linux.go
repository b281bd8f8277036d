package inotify

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Drain reads every event queued on fd, a non-blocking inotify instance
// (IN_NONBLOCK), into buf and calls event for each: the watch, the event's
// mask, and whether it names an entry of the watched directory. It
// returns when the queue is empty; false when reading failed or an event
// came cut short, so events may have been missed.
func Drain(fd int, buf []byte, event func(wd int32, mask uint32, named bool)) bool {
	ok := true
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return ok && errors.Is(err, unix.EAGAIN)
		}
		b := buf[:n]
		for len(b) >= unix.SizeofInotifyEvent {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
			end := unix.SizeofInotifyEvent + int(ev.Len)
			if end > len(b) {
				ok = false
				break
			}
			event(ev.Wd, ev.Mask, ev.Len > 0)
			b = b[end:]
		}
	}
}
