# The app's --screenshot writes as every output is written (writeFileAtomically), and checks its
# path before the lesson runs: a missing folder or a FIFO is refused at once in one line (exit 2),
# where the app used to run the whole lesson and then fail or, on a FIFO, block forever; a
# symbolic link is followed and stays a link.
# Usage: cmake -DAPP=ampstudio -DWORK=dir -P app_screenshot_outputs.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{QT_QPA_PLATFORM} offscreen)
set(lesson --lesson spirals --steps 3)

function(app_shot target)
  execute_process(COMMAND ${APP} ${lesson} --screenshot ${target} TIMEOUT 120
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  set(rc "${rc}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

app_shot(${WORK}/no/such/folder/shot.png)
if(NOT rc EQUAL 2 OR NOT err MATCHES "shot.png: cannot write there: its folder .* does not exist")
  message(FATAL_ERROR "a missing folder: expected exit 2 naming it, got ${rc}: ${err}")
endif()

execute_process(COMMAND mkfifo ${WORK}/fifo.png RESULT_VARIABLE made)
if(made EQUAL 0)
  app_shot(${WORK}/fifo.png)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "fifo.png: not a regular file")
    message(FATAL_ERROR "a FIFO: expected exit 2 naming it, got ${rc}: ${err}")
  endif()
endif()

file(WRITE ${WORK}/target.png "an older file")
file(CREATE_LINK ${WORK}/target.png ${WORK}/link.png SYMBOLIC)
app_shot(${WORK}/link.png)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a screenshot through a link failed (${rc}): ${err}")
endif()
if(NOT IS_SYMLINK ${WORK}/link.png)
  message(FATAL_ERROR "the link was replaced by a file")
endif()
file(READ ${WORK}/target.png head LIMIT 8 HEX)
if(NOT head STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "the link's target is not a PNG (starts ${head})")
endif()

# Issue 42 item 7: --help and --version need no display (they said "no display" on a server,
# where a user reads them first), and the help names every kind of FILE, TensorBoard folders too.
unset(ENV{QT_QPA_PLATFORM})
unset(ENV{DISPLAY})
unset(ENV{WAYLAND_DISPLAY})
foreach(option --help --version)
  execute_process(COMMAND ${APP} ${option} TIMEOUT 60 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR err MATCHES "no display")
    message(FATAL_ERROR "${option} without a display: expected exit 0, got ${rc}: ${err}")
  endif()
  if(option STREQUAL "--help" AND NOT out MATCHES "TensorBoard")
    message(FATAL_ERROR "--help does not say a TensorBoard folder can be opened: ${out}")
  endif()
endforeach()
