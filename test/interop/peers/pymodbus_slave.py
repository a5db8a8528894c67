#!/usr/bin/python3
"""An independent Modbus slave for the interop suite, built on Debian's
pymodbus (3.0.x API: StartAsync*Server with defer_start).

Serves one unit with 10000 holding registers and coils, over RTU on a serial
port or over Modbus TCP. Prints "ready" once it serves. Then reads commands
on stdin and answers each with one JSON line on stdout, so a test can check
what a master wrote:

    get hr ADDRESS COUNT   -> [values]   (holding registers)
    get co ADDRESS COUNT   -> [0|1 ...]  (coils)

It exits when stdin closes, so it never outlives the test that started it.
"""

import argparse
import asyncio
import json
import os
import sys
import threading

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartAsyncSerialServer, StartAsyncTcpServer
from pymodbus.transaction import ModbusRtuFramer, ModbusSocketFramer

SIZE = 10000
FUNCTION = {"hr": 3, "co": 1}


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--unit", type=int, default=1)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--rtu", help="serial port path")
    target.add_argument("--tcp", type=int, help="TCP port on 127.0.0.1")
    parser.add_argument("--baud", type=int, default=19200)
    parser.add_argument("--set", action="append", default=[], metavar="ADDRESS=VALUE",
                        help="initial holding register value")
    return parser.parse_args()


def answer_commands(store):
    for line in sys.stdin:
        words = line.split()
        try:
            _, table, address, count = words
            values = store.getValues(FUNCTION[table], int(address), int(count))
            print(json.dumps([int(v) for v in values]), flush=True)
        except (ValueError, KeyError) as error:
            print(json.dumps({"error": str(error)}), flush=True)
    os._exit(0)


async def serve(args, context):
    if args.tcp is not None:
        server = await StartAsyncTcpServer(context=context, framer=ModbusSocketFramer,
                                           address=("127.0.0.1", args.tcp), defer_start=True)
        asyncio.create_task(server.serve_forever())
        await server.serving
    else:
        server = await StartAsyncSerialServer(context=context, framer=ModbusRtuFramer, port=args.rtu,
                                              baudrate=args.baud, bytesize=8, parity="N", stopbits=1,
                                              defer_start=True)
        await server.start()
        asyncio.create_task(server.serve_forever())
    print("ready", flush=True)
    await asyncio.Event().wait()


def main():
    args = parse_args()
    store = ModbusSlaveContext(
        di=ModbusSequentialDataBlock(0, [0] * SIZE),
        co=ModbusSequentialDataBlock(0, [0] * SIZE),
        hr=ModbusSequentialDataBlock(0, [0] * SIZE),
        ir=ModbusSequentialDataBlock(0, [0] * SIZE),
        zero_mode=True,
    )
    for assignment in args.set:
        address, value = assignment.split("=")
        store.setValues(3, int(address), [int(value)])
    context = ModbusServerContext(slaves={args.unit: store}, single=False)
    threading.Thread(target=answer_commands, args=(store,), daemon=True).start()
    asyncio.run(serve(args, context))


if __name__ == "__main__":
    main()
