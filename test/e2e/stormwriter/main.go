/*
Copyright 2026 The Flint Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command stormwriter is the e2e lab's writer for the kernel host's fault
// storm (TestAKernelHostWritesThroughAStorm): in a Pod on the workload
// node, on a raw block PVC the kernel's NVMe-oF host serves, it writes
// self-describing 4 KiB blocks (test/ledger) at random places with
// O_DIRECT|O_DSYNC, one after another, and journals each on stdout before
// it is sent and once it is acknowledged. Every --check-every it reads
// the whole region back and prints what each block holds; the test
// judges that against the journal. It stops writing at --until, or once
// --stop-file holds --stop-word, reads once more and exits. The lab
// builds it into an image of its own.
//
// Journal lines (times in Unix milliseconds):
//
//	try <seq> <block>
//	ack <seq> <block> <time>
//	fail <seq> <block> <time> <error>
//	read <time> <found>   (ledger.FormatFound)
//	readfail <time> <error>
//	done
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/flint-io/flint/test/ledger"
)

func main() {
	device := flag.String("device", "/dev/storm", "the raw block device")
	blocks := flag.Int("blocks", 256, "how many blocks from the start of the device are written and checked")
	until := flag.Int64("until", 0, "the Unix time at which writing stops")
	checkEvery := flag.Duration("check-every", 30*time.Second, "how often the region is read back")
	seed := flag.Uint64("seed", 1, "the seed of the blocks written")
	stopFile := flag.String("stop-file", "", "a file that, once it holds --stop-word, stops the writing (a downward API volume's annotations)")
	stopWord := flag.String("stop-word", "", "see --stop-file")
	flag.Parse()
	stop := func() bool {
		data, err := os.ReadFile(*stopFile)
		return *stopFile != "" && err == nil && strings.Contains(string(data), *stopWord)
	}
	if err := run(*device, *blocks, time.Unix(*until, 0), *checkEvery, *seed, stop); err != nil {
		fmt.Fprintln(os.Stderr, "stormwriter:", err)
		os.Exit(1)
	}
}

func run(device string, blocks int, until time.Time, checkEvery time.Duration, seed uint64, stop func() bool) error {
	fd, err := syscall.Open(device, syscall.O_RDWR|syscall.O_DIRECT|syscall.O_DSYNC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", device, err)
	}
	defer func() { _ = syscall.Close(fd) }()
	// O_DIRECT needs aligned buffers: anonymous maps are page-aligned.
	region, err := syscall.Mmap(-1, 0, blocks*ledger.BlockSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return err
	}
	block := region[:ledger.BlockSize]
	rng := rand.New(rand.NewPCG(seed, 2))
	nextCheck := time.Now().Add(checkEvery)
	for seq := uint64(1); time.Now().Before(until) && !stop(); seq++ {
		b := uint64(rng.IntN(blocks))
		copy(block, ledger.EncodeBlock(b, seq))
		fmt.Printf("try %d %d\n", seq, b)
		if _, err := syscall.Pwrite(fd, block, int64(b)*ledger.BlockSize); err != nil {
			fmt.Printf("fail %d %d %d %v\n", seq, b, time.Now().UnixMilli(), err)
			time.Sleep(200 * time.Millisecond)
		} else {
			fmt.Printf("ack %d %d %d\n", seq, b, time.Now().UnixMilli())
		}
		if time.Now().After(nextCheck) {
			readBack(fd, region)
			nextCheck = time.Now().Add(checkEvery)
		}
	}
	// The last read counts most: try it for two minutes.
	for deadline := time.Now().Add(2 * time.Minute); !readBack(fd, region) && time.Now().Before(deadline); {
		time.Sleep(2 * time.Second)
	}
	fmt.Println("done")
	return nil
}

// readBack reads the region and prints what each block holds; false if
// the read failed.
func readBack(fd int, region []byte) bool {
	n, err := syscall.Pread(fd, region, 0)
	if err == nil && n < len(region) {
		err = fmt.Errorf("read %d bytes of %d", n, len(region))
	}
	if err != nil {
		fmt.Printf("readfail %d %v\n", time.Now().UnixMilli(), err)
		return false
	}
	fmt.Printf("read %d %s\n", time.Now().UnixMilli(), ledger.FormatFound(ledger.Decode(region)))
	return true
}
