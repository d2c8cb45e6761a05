# bash completion for hlo-launch and hlo-convert: options are read from the
# installed binary's --help, so they are never out of date; files otherwise.
_hlo_launch_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  if [[ $cur == -* ]]; then
    local opts
    opts=$("${COMP_WORDS[0]}" --help 2>/dev/null | grep -oE -- '(^|[ ,])--?[a-zA-Z][-a-zA-Z0-9]*' |
           sed 's/^[ ,]*//' | sort -u)
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
  fi
}
complete -F _hlo_launch_complete hlo-launch hlo-convert
