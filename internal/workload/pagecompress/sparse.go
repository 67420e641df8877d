package pagecompress

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// onDisk is what a sparse file takes: the pages of pageSize bytes that
// hold any data (a page compressed and punched keeps its first blocks), and
// the bytes its allocated blocks take.
func onDisk(path string, pageSize int64) (dataPages, allocated int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := st.Size()
	fd := int(f.Fd())
	counted := int64(-1) // the last page counted
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole from off to the end
		}
		if err != nil {
			return 0, 0, fmt.Errorf("find the data of %s: %w", path, err)
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return 0, 0, fmt.Errorf("find the holes of %s: %w", path, err)
		}
		first, last := data/pageSize, (hole-1)/pageSize
		if first <= counted {
			first = counted + 1
		}
		if last >= first {
			dataPages += last - first + 1
			counted = last
		}
		off = hole
	}
	return dataPages, st.Sys().(*syscall.Stat_t).Blocks * 512, nil
}
